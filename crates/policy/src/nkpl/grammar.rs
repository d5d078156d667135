//! NKPL's grammar as KATch reads it: statements cut out of the file's lines, and a parser
//! into [`Stmt`] and [`Expr`] trees that follows KATch's parser production by production
//! (see the table in [`crate::nkpl`]).
//!
//! The parser is a parsing-expression grammar like KATch's (fastparse): alternatives are
//! tried in order and the first that succeeds is taken, keywords are matched as plain text
//! (so `forwardx` reads as `forward x`, as in KATch), whitespace (space, tab, carriage return,
//! newline) may stand between any two tokens but not inside a number, a name or a field, and
//! a statement must be read to its end. An opening parenthesis commits: an error inside it is
//! reported where it is, not retried as something else.

use std::fmt;

/// One statement's text, cut out of a file as KATch does: a line that does not start with a
/// space or a tab starts a statement, and each following line that does continues it (blank
/// lines and comment lines in between are dropped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The statement's characters; continuation lines are joined with `\n`.
    pub text: Vec<char>,
    /// For each physical line in it: the offset in `text` where it starts, and its line
    /// number in the file (from 1).
    pub lines: Vec<(usize, usize)>,
}

impl Source {
    /// The first line of the statement in the file.
    pub fn line(&self) -> usize {
        self.lines[0].1
    }

    /// The file line and column (in characters, from 1) of offset `at` in the statement.
    pub fn place(&self, at: usize) -> (usize, usize) {
        let k = self.lines.partition_point(|&(start, _)| start <= at).max(1) - 1;
        let (start, line) = self.lines[k];
        (line, at - start + 1)
    }

    /// The statement on one line: runs of whitespace that hold a line break become a space.
    pub fn one_line(&self) -> String {
        let s: String = self.text.iter().collect();
        let mut out = String::with_capacity(s.len());
        for (i, part) in s.split('\n').enumerate() {
            if i == 0 {
                out.push_str(part.trim_end());
            } else {
                out.push(' ');
                out.push_str(part.trim());
            }
        }
        out.trim().to_string()
    }
}

/// The line without its `--` comment (outside a quoted path). KATch has comment lines only;
/// a comment after a statement is rampart's extension (KATch rejects the line, since `--`
/// can never be part of a statement).
fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    let b = line.as_bytes();
    for i in 0..b.len() {
        match b[i] {
            b'"' => quoted = !quoted,
            b'-' if !quoted && b.get(i + 1) == Some(&b'-') => return &line[..i],
            _ => {}
        }
    }
    line
}

/// Whether KATch drops the line: empty once trimmed (Java's `trim` removes every character up
/// to U+0020), or a comment.
fn blank(line: &str) -> bool {
    line.trim_matches(|c: char| c <= ' ').is_empty()
}

/// Cuts a file into statements. `Err` holds the line of an indented line that no statement
/// comes before.
pub fn statements(text: &str) -> Result<Vec<Source>, usize> {
    let mut out: Vec<Source> = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = strip_comment(raw);
        if blank(line) {
            continue;
        }
        if raw.starts_with(' ') || raw.starts_with('\t') {
            let Some(last) = out.last_mut() else { return Err(i + 1) };
            last.text.push('\n');
            last.lines.push((last.text.len(), i + 1));
            last.text.extend(line.chars());
        } else {
            out.push(Source { text: line.chars().collect(), lines: vec![(0, i + 1)] });
        }
    }
    Ok(out)
}

/// A value: an integer or a name bound to one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A 32-bit signed integer.
    Int(i32),
    /// A name, and its offset in the statement.
    Name(String, usize),
}

/// The operators KATch folds to the left at one precedence level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `⊕` (`^`, `xor`)
    Xor,
    /// `∩` (`intersect`)
    Inter,
    /// `∖` (`-`)
    Diff,
}

impl BinOp {
    /// The operator's Unicode spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Xor => "⊕",
            BinOp::Inter => "∩",
            BinOp::Diff => "∖",
        }
    }
}

/// An NKPL expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// `∅` `⊥` `drop`
    Drop,
    /// `ε` `⊤` `skip`
    Skip,
    /// `δ` `dup`
    Dup,
    /// `@f=v` (any number of `?` after it)
    Test(String, Value),
    /// `@f≠v`, `@f!=v`
    TestNe(String, Value),
    /// `@f←v`, `@f:=v`
    Assign(String, Value),
    /// A name bound by `name = e`, and its offset.
    Name(String, usize),
    /// `¬e` (`!e`) applied `times` times; the offset of the first `¬`.
    Not(Box<Expr>, usize, usize),
    /// `e⋆` (`e*`) applied `times` times.
    Star(Box<Expr>, usize),
    /// `e op e op e ...` for `⊕ ∩ ∖`, grouped to the left: `((e op e) op e) ...`.
    Chain(Box<Expr>, Vec<(BinOp, Expr)>),
    /// `e ⋅ e ⋅ ...` (`∧`, `;`), two or more.
    Seq(Vec<Expr>),
    /// `e ∪ e ∪ ...` (`+`, `|`, `∨`), two or more.
    Sum(Vec<Expr>),
    /// `forward e`: the packets `e` can output, as a test.
    Forward(Box<Expr>),
    /// `backward e`: the packets `e` can take in, as a test.
    Backward(Box<Expr>),
    /// `exists @f e`; the offset of `e`.
    Exists(String, Box<Expr>, usize),
    /// `forall @f e`; the offset of `e`.
    Forall(String, Box<Expr>, usize),
    /// `rangesum @f a..b`: `@f=a ∪ … ∪ @f=b`.
    RangeSum(String, Value, Value),
}

/// The right-hand side of `name = …` or `print …`: KATch's `NKExpr | ValExpr`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Term {
    /// An expression (a bare name is read as one).
    Exp(Expr),
    /// An integer.
    Int(i32),
}

/// An NKPL statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stmt {
    /// `check e1 ≡ e2` (`==`) or `check e1 ≢ e2` (`!==`).
    Check {
        /// The left side.
        left: Expr,
        /// `true` for `≡`.
        equal: bool,
        /// The right side.
        right: Expr,
    },
    /// `name = e` or `name = 42`.
    Let(String, Term),
    /// `import "path"` (relative to the importing file).
    Import(String),
    /// `forward e` or `backward e` as a statement: prints the packet set.
    Run {
        /// `true` for `forward`.
        forward: bool,
        /// The expression.
        expr: Expr,
    },
    /// `print e`.
    Print(Term),
    /// `for i ∈ a..b do statement` (`in`, `=`; inclusive).
    For {
        /// The loop variable.
        var: String,
        /// The first value.
        from: Value,
        /// The last value.
        to: Value,
        /// The statement run for each value.
        body: Box<Stmt>,
    },
    /// `graphviz "path" e`.
    Graphviz(String, Expr),
}

/// A statement that does not parse: where (offset in the statement) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// Offset in the statement's characters.
    pub at: usize,
    /// What went wrong.
    pub message: String,
}

/// A failure that no other alternative may retry (inside parentheses, a number too large, a
/// nesting too deep).
enum Fatal {
    /// Report the furthest failure.
    Furthest,
    /// This error.
    At(usize, String),
}

type R<T> = Result<Option<T>, Fatal>;

struct Parser<'a> {
    s: &'a [char],
    at: usize,
    far: usize,
    expected: Vec<&'static str>,
    depth: usize,
    max: usize,
}

fn name_start(c: char) -> bool {
    c.is_ascii_alphabetic()
}

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '_' | '-')
}

impl Parser<'_> {
    /// Skips KATch's whitespace (fastparse's `MultiLineWhitespace`).
    fn ws(&mut self) {
        while matches!(self.s.get(self.at), Some(' ' | '\t' | '\r' | '\n')) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<char> {
        self.s.get(self.at).copied()
    }

    fn lit(&mut self, t: &str) -> bool {
        let mut i = self.at;
        for c in t.chars() {
            if self.s.get(i) != Some(&c) {
                return false;
            }
            i += 1;
        }
        self.at = i;
        true
    }

    fn lit_any(&mut self, ts: &[&str]) -> bool {
        ts.iter().any(|t| self.lit(t))
    }

    /// Notes that `what` was expected here (for the error message).
    fn expect(&mut self, what: &'static str) {
        if self.at > self.far {
            self.far = self.at;
            self.expected.clear();
        }
        if self.at == self.far && !self.expected.contains(&what) {
            self.expected.push(what);
        }
    }

    fn nest(&mut self) -> Result<(), Fatal> {
        self.depth += 1;
        if self.depth > self.max {
            return Err(Fatal::At(self.at, "expression nests too deeply".into()));
        }
        Ok(())
    }

    /// `"-".? ~~ digit ~~ digit.repX`, as a 32-bit integer.
    fn integer(&mut self) -> R<i32> {
        self.ws();
        let start = self.at;
        let mut i = self.at;
        if self.s.get(i) == Some(&'-') {
            i += 1;
        }
        let digits = i;
        while self.s.get(i).is_some_and(char::is_ascii_digit) {
            i += 1;
        }
        if i == digits {
            self.expect("an integer");
            return Ok(None);
        }
        let text: String = self.s[start..i].iter().collect();
        match text.parse::<i32>() {
            Ok(v) => {
                self.at = i;
                Ok(Some(v))
            }
            Err(_) => Err(Fatal::At(start, format!("{text} does not fit in 32 bits"))),
        }
    }

    /// `[a-zA-Z][a-zA-Z0-9_]*`
    fn var_name(&mut self) -> Option<(String, usize)> {
        self.ws();
        let start = self.at;
        if !self.peek().is_some_and(name_start) {
            return None;
        }
        while self.peek().is_some_and(name_char) {
            self.at += 1;
        }
        Some((self.s[start..self.at].iter().collect(), start))
    }

    /// `"@" ~~ [a-zA-Z][a-zA-Z0-9]*`
    fn field(&mut self) -> Option<String> {
        self.ws();
        let start = self.at;
        if self.peek() != Some('@') || !self.s.get(start + 1).is_some_and(|&c| name_start(c)) {
            return None;
        }
        self.at += 1;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric()) {
            self.at += 1;
        }
        Some(self.s[start + 1..self.at].iter().collect())
    }

    /// `integer | varName`
    fn value(&mut self) -> R<Value> {
        if let Some(v) = self.integer()? {
            return Ok(Some(Value::Int(v)));
        }
        if let Some((n, at)) = self.var_name() {
            return Ok(Some(Value::Name(n, at)));
        }
        self.expect("a value (an integer or a name)");
        Ok(None)
    }

    /// `"?".rep`
    fn questions(&mut self) {
        loop {
            let save = self.at;
            self.ws();
            if !self.lit("?") {
                self.at = save;
                return;
            }
        }
    }

    /// KATch's `exprNK`: the prefix forms, else a union.
    fn expr_nk(&mut self) -> R<Expr> {
        self.ws();
        let start = self.at;
        for (kw, forward) in [("forward", true), ("backward", false)] {
            if self.lit(kw) {
                if let Some(e) = self.expr_u()? {
                    let e = Box::new(e);
                    return Ok(Some(if forward { Expr::Forward(e) } else { Expr::Backward(e) }));
                }
                self.at = start;
            }
        }
        for (kw, exists) in [("exists", true), ("forall", false)] {
            if self.lit(kw) {
                let f = self.field();
                if f.is_none() {
                    self.expect("a field (@name)");
                }
                if let Some(f) = f {
                    self.ws();
                    let at = self.at;
                    if let Some(e) = self.expr_u()? {
                        let e = Box::new(e);
                        return Ok(Some(if exists {
                            Expr::Exists(f, e, at)
                        } else {
                            Expr::Forall(f, e, at)
                        }));
                    }
                }
                self.at = start;
            }
        }
        if self.lit("rangesum") {
            let f = self.field();
            if f.is_none() {
                self.expect("a field (@name)");
            }
            if let Some(f) = f
                && let Some(a) = self.value()?
            {
                self.ws();
                if self.lit("..") {
                    if let Some(b) = self.value()? {
                        return Ok(Some(Expr::RangeSum(f, a, b)));
                    }
                } else {
                    self.expect("..");
                }
            }
            self.at = start;
        }
        self.expr_u()
    }

    /// `exprC.rep(1, sep = "|" | "∪" | "∨" | "+")`
    fn expr_u(&mut self) -> R<Expr> {
        let Some(first) = self.expr_c()? else { return Ok(None) };
        let mut items = vec![first];
        loop {
            let save = self.at;
            self.ws();
            if self.lit_any(&["|", "∪", "∨", "+"])
                && let Some(e) = self.expr_c()?
            {
                items.push(e);
                continue;
            }
            self.at = save;
            break;
        }
        Ok(Some(if items.len() == 1 { items.pop().expect("one") } else { Expr::Sum(items) }))
    }

    /// `exprZ.rep(1, sep = "⋅" | "∧" | ";")`, and `·` (U+00B7), rampart's extension.
    fn expr_c(&mut self) -> R<Expr> {
        let Some(first) = self.expr_z()? else { return Ok(None) };
        let mut items = vec![first];
        loop {
            let save = self.at;
            self.ws();
            if self.lit_any(&["⋅", "∧", ";", "·"])
                && let Some(e) = self.expr_z()?
            {
                items.push(e);
                continue;
            }
            self.at = save;
            break;
        }
        Ok(Some(if items.len() == 1 { items.pop().expect("one") } else { Expr::Seq(items) }))
    }

    /// `exprQ ~ (("⊕" | "^" | "xor" | "∩" | "intersect" | "-" | "∖") ~ exprQ).rep`, folded to
    /// the left.
    fn expr_z(&mut self) -> R<Expr> {
        let Some(first) = self.expr_q()? else { return Ok(None) };
        let mut rest = Vec::new();
        loop {
            let save = self.at;
            self.ws();
            let op = if self.lit_any(&["⊕", "^", "xor"]) {
                BinOp::Xor
            } else if self.lit_any(&["∩", "intersect"]) {
                BinOp::Inter
            } else if self.lit_any(&["-", "∖"]) {
                BinOp::Diff
            } else {
                self.at = save;
                break;
            };
            match self.expr_q()? {
                Some(e) => rest.push((op, e)),
                None => {
                    self.at = save;
                    break;
                }
            }
        }
        Ok(Some(if rest.is_empty() { first } else { Expr::Chain(Box::new(first), rest) }))
    }

    /// `exprS ~ "?".rep` (the marks mean nothing).
    fn expr_q(&mut self) -> R<Expr> {
        let e = self.expr_s()?;
        if e.is_some() {
            self.questions();
        }
        Ok(e)
    }

    /// `exprN ~ ("⋆" | "*").rep`
    fn expr_s(&mut self) -> R<Expr> {
        let Some(e) = self.expr_n()? else { return Ok(None) };
        let mut times = 0;
        loop {
            let save = self.at;
            self.ws();
            if self.lit_any(&["⋆", "*"]) {
                times += 1;
            } else {
                self.at = save;
                break;
            }
        }
        Ok(Some(if times == 0 { e } else { Expr::Star(Box::new(e), times) }))
    }

    /// `("¬" | "!").rep ~ exprA`
    fn expr_n(&mut self) -> R<Expr> {
        self.ws();
        let start = self.at;
        let mut times = 0;
        loop {
            self.ws();
            if self.lit_any(&["¬", "!"]) {
                times += 1;
            } else {
                break;
            }
        }
        match self.expr_a()? {
            Some(e) if times > 0 => Ok(Some(Expr::Not(Box::new(e), times, start))),
            Some(e) => Ok(Some(e)),
            None => {
                self.at = start;
                Ok(None)
            }
        }
    }

    /// `empty | one | dup | test | mut | "(" ~/ exprNK ~ ")" | varName`
    fn expr_a(&mut self) -> R<Expr> {
        self.ws();
        let start = self.at;
        if self.lit_any(&["∅", "⊥", "drop"]) {
            return Ok(Some(Expr::Drop));
        }
        if self.lit_any(&["ε", "⊤", "skip"]) {
            return Ok(Some(Expr::Skip));
        }
        if self.lit_any(&["δ", "dup"]) {
            return Ok(Some(Expr::Dup));
        }
        if let Some(f) = self.field() {
            let after = self.at;
            for kind in 0..3 {
                self.at = after;
                self.ws();
                let ok = match kind {
                    0 => self.lit("="),
                    1 => self.lit_any(&["≠", "!="]),
                    _ => self.lit_any(&["←", ":="]),
                };
                if !ok {
                    continue;
                }
                if let Some(v) = self.value()? {
                    return Ok(Some(match kind {
                        0 => {
                            self.questions();
                            Expr::Test(f, v)
                        }
                        1 => {
                            self.questions();
                            Expr::TestNe(f, v)
                        }
                        _ => Expr::Assign(f, v),
                    }));
                }
            }
            self.at = after;
            self.expect("=, ≠ or ← after the field");
            self.at = start;
            return Ok(None);
        }
        if self.lit("(") {
            self.nest()?;
            let Some(e) = self.expr_nk()? else { return Err(Fatal::Furthest) };
            self.ws();
            if !self.lit(")") {
                self.expect(")");
                return Err(Fatal::Furthest);
            }
            self.depth -= 1;
            return Ok(Some(e));
        }
        if let Some((n, at)) = self.var_name() {
            return Ok(Some(Expr::Name(n, at)));
        }
        self.expect("an expression");
        self.at = start;
        Ok(None)
    }

    /// `exprNK | integer` (a name alone is an expression).
    fn term(&mut self) -> R<Term> {
        if let Some(e) = self.expr_nk()? {
            return Ok(Some(Term::Exp(e)));
        }
        if let Some(v) = self.integer()? {
            return Ok(Some(Term::Int(v)));
        }
        Ok(None)
    }

    /// `"\"" ~ [a-zA-Z0-9./_\-].rep(1) ~ "\""`
    fn path(&mut self) -> Option<String> {
        self.ws();
        if !self.lit("\"") {
            self.expect("a quoted path");
            return None;
        }
        self.ws();
        let start = self.at;
        while self.peek().is_some_and(path_char) {
            self.at += 1;
        }
        if self.at == start {
            self.expect("a path of letters, digits and . / _ -");
            return None;
        }
        let path: String = self.s[start..self.at].iter().collect();
        self.ws();
        if !self.lit("\"") {
            self.expect("\" closing the path (letters, digits and . / _ - only)");
            return None;
        }
        Some(path)
    }

    /// `checkStmt | letStmt | importStmt | runStmt | printStmt | forStmt | graphvizStmt`
    fn stmt(&mut self) -> R<Stmt> {
        let start = self.at;
        for alt in 0..7 {
            self.at = start;
            let s = match alt {
                0 => self.check()?,
                1 => self.let_stmt()?,
                2 => self.import()?,
                3 => self.run()?,
                4 => self.print()?,
                5 => self.for_stmt()?,
                _ => self.graphviz()?,
            };
            if s.is_some() {
                return Ok(s);
            }
        }
        self.at = start;
        Ok(None)
    }

    fn check(&mut self) -> R<Stmt> {
        self.ws();
        if !self.lit("check") {
            return Ok(None);
        }
        let Some(left) = self.expr_nk()? else { return Ok(None) };
        self.ws();
        // `=/=` for ≢ is rampart's extension.
        let equal = if self.lit_any(&["≡", "=="]) {
            true
        } else if self.lit_any(&["≢", "!==", "=/="]) {
            false
        } else {
            self.expect("≡ or ≢");
            return Ok(None);
        };
        let Some(right) = self.expr_nk()? else { return Ok(None) };
        Ok(Some(Stmt::Check { left, equal, right }))
    }

    fn let_stmt(&mut self) -> R<Stmt> {
        let Some((name, _)) = self.var_name() else { return Ok(None) };
        self.ws();
        if !self.lit("=") {
            self.expect("=");
            return Ok(None);
        }
        let Some(t) = self.term()? else { return Ok(None) };
        Ok(Some(Stmt::Let(name, t)))
    }

    fn import(&mut self) -> R<Stmt> {
        self.ws();
        if !self.lit("import") {
            return Ok(None);
        }
        Ok(self.path().map(Stmt::Import))
    }

    fn run(&mut self) -> R<Stmt> {
        self.ws();
        let forward = if self.lit("forward") {
            true
        } else if self.lit("backward") {
            false
        } else {
            return Ok(None);
        };
        Ok(self.expr_nk()?.map(|expr| Stmt::Run { forward, expr }))
    }

    fn print(&mut self) -> R<Stmt> {
        self.ws();
        if !self.lit("print") {
            return Ok(None);
        }
        Ok(self.term()?.map(Stmt::Print))
    }

    fn for_stmt(&mut self) -> R<Stmt> {
        self.ws();
        if !self.lit("for") {
            return Ok(None);
        }
        let Some((var, _)) = self.var_name() else {
            self.expect("a loop variable");
            return Ok(None);
        };
        self.ws();
        if !self.lit_any(&["=", "in", "∈"]) {
            self.expect("∈");
            return Ok(None);
        }
        // KATch takes integers here; names bound to values are rampart's extension.
        let Some(from) = self.value()? else { return Ok(None) };
        self.ws();
        if !self.lit("..") {
            self.expect("..");
            return Ok(None);
        }
        let Some(to) = self.value()? else { return Ok(None) };
        self.ws();
        if !self.lit("do") {
            self.expect("do");
            return Ok(None);
        }
        self.nest()?;
        let body = self.stmt()?;
        self.depth -= 1;
        let Some(body) = body else {
            self.expect("a statement");
            return Ok(None);
        };
        Ok(Some(Stmt::For { var, from, to, body: Box::new(body) }))
    }

    fn graphviz(&mut self) -> R<Stmt> {
        self.ws();
        if !self.lit("graphviz") {
            return Ok(None);
        }
        let Some(path) = self.path() else { return Ok(None) };
        Ok(self.expr_nk()?.map(|e| Stmt::Graphviz(path, e)))
    }

    /// The message for the furthest failure.
    fn error(&self) -> SyntaxError {
        let at = self.far.min(self.s.len());
        let what = match self.expected.as_slice() {
            [] => "a statement (check, name = …, import, for, print, forward, backward, graphviz)"
                .to_string(),
            [one] => (*one).to_string(),
            more => {
                let (last, init) = more.split_last().expect("two or more");
                format!("{} or {last}", init.join(", "))
            }
        };
        let near: String = self.s[at..].iter().take(20).collect();
        let near = near.split('\n').next().unwrap_or("").to_string();
        let mut message = if at >= self.s.len() {
            format!("expected {what} at the end of the statement")
        } else {
            format!("expected {what} before \"{near}\"")
        };
        if let Some(hint) = keyword_hint(self.s, at) {
            message.push_str(&format!(" ({hint})"));
        }
        SyntaxError { at, message }
    }
}

/// When an error follows a keyword glued to more letters (`dropped`, `skip2`, `dupes`), the
/// reason: KATch reads the keyword and leaves the rest.
fn keyword_hint(s: &[char], at: usize) -> Option<String> {
    if !s.get(at).is_some_and(|&c| name_char(c)) {
        return None;
    }
    for kw in ["drop", "skip", "dup"] {
        let n = kw.len();
        if at < n {
            continue;
        }
        let word: String = s[at - n..at].iter().collect();
        let before_ok = at == n || !name_char(s[at - n - 1]);
        if word == kw && before_ok {
            let mut end = at;
            while s.get(end).is_some_and(|&c| name_char(c)) {
                end += 1;
            }
            let name: String = s[at - n..end].iter().collect();
            return Some(format!(
                "\"{name}\" reads as {kw} followed by \"{}\": names cannot start with drop, skip or dup",
                &name[n..]
            ));
        }
    }
    None
}

/// Parses one statement. `max_depth` bounds parentheses and nested `for`s.
pub fn parse_statement(src: &[char], max_depth: usize) -> Result<Stmt, SyntaxError> {
    let mut p = Parser { s: src, at: 0, far: 0, expected: Vec::new(), depth: 0, max: max_depth };
    match p.stmt() {
        Ok(Some(s)) => {
            p.ws();
            if p.at == src.len() {
                return Ok(s);
            }
            p.expect("an operator or the end of the statement");
            Err(p.error())
        }
        Ok(None) | Err(Fatal::Furthest) => Err(p.error()),
        Err(Fatal::At(at, message)) => Err(SyntaxError { at, message }),
    }
}

/// Parses an expression alone (the whole text), for tools and tests.
pub fn parse_expr(text: &str, max_depth: usize) -> Result<Expr, SyntaxError> {
    let s: Vec<char> = text.chars().collect();
    let mut p = Parser { s: &s, at: 0, far: 0, expected: Vec::new(), depth: 0, max: max_depth };
    match p.expr_nk() {
        Ok(Some(e)) => {
            p.ws();
            if p.at == s.len() {
                return Ok(e);
            }
            p.expect("an operator or the end of the expression");
            Err(p.error())
        }
        Ok(None) | Err(Fatal::Furthest) => Err(p.error()),
        Err(Fatal::At(at, message)) => Err(SyntaxError { at, message }),
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Name(n, _) => f.write_str(n),
        }
    }
}

/// Fully parenthesised: every compound expression in parentheses, so that the grouping the
/// parser chose can be read off.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, items: &[Expr], sep: &str| {
            f.write_str("(")?;
            for (i, e) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(sep)?;
                }
                write!(f, "{e}")?;
            }
            f.write_str(")")
        };
        match self {
            Expr::Drop => f.write_str("∅"),
            Expr::Skip => f.write_str("ε"),
            Expr::Dup => f.write_str("δ"),
            Expr::Test(x, v) => write!(f, "@{x}={v}"),
            Expr::TestNe(x, v) => write!(f, "@{x}≠{v}"),
            Expr::Assign(x, v) => write!(f, "@{x}←{v}"),
            Expr::Name(n, _) => f.write_str(n),
            Expr::Not(e, times, _) => {
                for _ in 0..*times {
                    f.write_str("¬")?;
                }
                write!(f, "({e})")
            }
            Expr::Star(e, times) => {
                write!(f, "({e})")?;
                for _ in 0..*times {
                    f.write_str("⋆")?;
                }
                Ok(())
            }
            Expr::Chain(first, rest) => {
                for _ in 0..rest.len() {
                    f.write_str("(")?;
                }
                write!(f, "{first}")?;
                for (op, e) in rest {
                    write!(f, " {} {e})", op.symbol())?;
                }
                Ok(())
            }
            Expr::Seq(items) => list(f, items, " ⋅ "),
            Expr::Sum(items) => list(f, items, " ∪ "),
            Expr::Forward(e) => write!(f, "(forward {e})"),
            Expr::Backward(e) => write!(f, "(backward {e})"),
            Expr::Exists(x, e, _) => write!(f, "(exists @{x} {e})"),
            Expr::Forall(x, e, _) => write!(f, "(forall @{x} {e})"),
            Expr::RangeSum(x, a, b) => write!(f, "(rangesum @{x} {a}..{b})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(t: &str) -> String {
        parse_expr(t, 100).map(|e| e.to_string()).unwrap_or_else(|e| format!("error: {e:?}"))
    }

    fn stmt(t: &str) -> Result<Stmt, SyntaxError> {
        let s: Vec<char> = t.chars().collect();
        parse_statement(&s, 100)
    }

    #[test]
    fn binary_operators_fold_to_the_left() {
        assert_eq!(expr("a - b - c"), "((a ∖ b) ∖ c)");
        assert_eq!(expr("a ∩ b ⊕ c ∖ d"), "(((a ∩ b) ⊕ c) ∖ d)");
        assert_eq!(expr("a xor b intersect c ^ d"), "(((a ⊕ b) ∩ c) ⊕ d)");
        assert_eq!(expr("a ⋅ b - c ∪ d"), "((a ⋅ (b ∖ c)) ∪ d)");
        assert_eq!(expr("a ∪ b ⋅ c"), "(a ∪ (b ⋅ c))");
        assert_eq!(expr("a ; b + c | d ∨ e ∧ f"), "((a ⋅ b) ∪ c ∪ d ∪ (e ⋅ f))");
    }

    #[test]
    fn prefix_and_postfix_operators() {
        assert_eq!(expr("¬a⋆"), "(¬(a))⋆");
        assert_eq!(expr("!!a*"), "(¬¬(a))⋆");
        assert_eq!(expr("a⋆⋆?"), "(a)⋆⋆");
        assert_eq!(expr("@a=3?⋆"), "(@a=3)⋆");
        assert_eq!(expr("@a=3??⋆"), "(@a=3)⋆");
        assert_eq!(expr("@a = 3 ? ⋆"), "(@a=3)⋆");
        // A `?` after anything but a test comes after the stars, as in KATch.
        assert!(expr("(a)?⋆").starts_with("error"));
        assert!(expr("x?⋆").starts_with("error"));
        assert_eq!(expr("x⋆?"), "(x)⋆");
    }

    #[test]
    fn keywords_and_spellings() {
        assert_eq!(expr("forward a ∪ b"), "(forward (a ∪ b))");
        assert_eq!(expr("exists @f @f=1 ⋅ @g=2"), "(exists @f (@f=1 ⋅ @g=2))");
        assert_eq!(expr("rangesum @p 1 .. 3"), "(rangesum @p 1..3)");
        assert_eq!(expr("⊥ ∪ drop ∪ skip ∪ ⊤ ∪ dup"), "(∅ ∪ ∅ ∪ ε ∪ ε ∪ δ)");
        assert_eq!(expr("@a!=-1 ⋅ @b:=x ⋅ @c≠2"), "(@a≠-1 ⋅ @b←x ⋅ @c≠2)");
        // Keywords are plain text to KATch: `forwardx` is `forward x`.
        assert_eq!(expr("forwardx"), "(forward x)");
        // A keyword alone falls back to a name.
        assert_eq!(expr("(forward)"), "forward");
        assert!(expr("dropped").contains("names cannot start with drop"));
        // Field names are letters and digits.
        assert!(expr("@ip_dst=1").starts_with("error"));
        assert!(expr("@ a=1").starts_with("error"));
        assert!(expr("@a=- 1").starts_with("error"));
    }

    #[test]
    fn statements_are_lines_and_their_indented_continuations() {
        let text =
            "-- a comment\nx =\n  @a=5\n\ny = @a=5 \n  ⋅ \n\t@a←5 \n   -- inside\ncheck x ≡ y\n";
        let st = statements(text).unwrap();
        assert_eq!(st.len(), 3);
        assert_eq!(st[0].lines, vec![(0, 2), (4, 3)]);
        assert_eq!(st[1].place(0), (5, 1));
        let second_line_start = st[1].lines[1].0;
        assert_eq!(st[1].place(second_line_start + 2), (6, 3));
        assert_eq!(st[1].one_line(), "y = @a=5 ⋅ @a←5");
        assert_eq!(statements("  x = 1\n"), Err(1));
        assert!(matches!(stmt("check a ≡ b").unwrap(), Stmt::Check { equal: true, .. }));
        assert!(matches!(stmt("check a !== b").unwrap(), Stmt::Check { equal: false, .. }));
        assert!(matches!(stmt("x = -3").unwrap(), Stmt::Let(_, Term::Int(-3))));
        assert!(matches!(stmt("x = y").unwrap(), Stmt::Let(_, Term::Exp(Expr::Name(..)))));
        // `check = 3` is a binding: the check alternative fails and the next is tried.
        assert!(matches!(stmt("check = 3").unwrap(), Stmt::Let(..)));
        assert!(
            matches!(stmt("import \"a/b-c_d.nkpl\"").unwrap(), Stmt::Import(p) if p == "a/b-c_d.nkpl")
        );
        assert!(stmt("import \"a b\"").is_err());
        assert!(matches!(
            stmt("for i ∈ 1..3 do for j in 0..1 do check @a=i ≡ @a=j").unwrap(),
            Stmt::For { .. }
        ));
        let e = stmt("check a ≡ b c").unwrap_err();
        assert!(e.message.contains("end of the statement before \"c\""), "{e:?}");
        let e = stmt("check (@sw=1 ⋅ δ ≡ ∅").unwrap_err();
        assert_eq!(e.at, 17);
        assert!(e.message.starts_with("expected )"), "{e:?}");
        let e = stmt("check @a=99999999999 ≡ ⊥").unwrap_err();
        assert!(e.message.contains("32 bits"), "{e:?}");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("check {}ε{} ≡ ε", "(".repeat(5000), ")".repeat(5000));
        let e = stmt(&deep).unwrap_err();
        assert!(e.message.contains("too deeply"), "{e:?}");
    }
}
