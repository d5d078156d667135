//! NKPL, KATch's NetKAT language, read as KATch reads it: a parser ([`grammar`]) and a
//! runner for its statements.
//!
//! # Grammar
//!
//! Each row is one production of KATch's parser (`src/main/scala/Parser.scala` at commit
//! `c47e741` of `cornell-netlab/KATch`; the line structure is `Runner.runFile`), tightest last.
//! Alternatives are tried in order and the first that parses is taken; keywords are plain
//! text, so `forwardx` is `forward x` in rampart as in KATch. Whitespace (space, tab, carriage
//! return, line feed) may stand between any two tokens, never inside a number, name or field.
//!
//! | rampart | form | KATch |
//! | --- | --- | --- |
//! | lines | a line starting with a space or a tab continues the statement above; blank lines and lines whose first non-blank characters are `--` are dropped, also between continuation lines | `Runner.runFile` |
//! | statement | check, binding, import, run, print, for, graphviz (first that parses); the whole statement must be read | `stmt`, `parseStmt` |
//! | check | `check` e (`≡` \| `==` \| `≢` \| `!==`) e | `checkStmt` |
//! | binding | name `=` (e \| integer) | `letStmt`, `expr`, `valExpr` |
//! | import | `import` `"` path `"`, path of `a-z A-Z 0-9 . / _ -`, relative to the importing file | `importStmt` |
//! | run | `forward` e \| `backward` e (prints the packet set) | `runStmt` |
//! | print | `print` (e \| integer) | `printStmt` |
//! | for | `for` name (`=` \| `in` \| `∈`) integer `..` integer `do` statement (inclusive; the variable stays bound to the last value) | `forStmt` |
//! | graphviz | `graphviz` `"` path `"` e | `graphvizStmt` |
//! | e | `forward` u \| `backward` u \| `exists` field u \| `forall` field u \| `rangesum` field integer `..` integer \| u | `exprNK` |
//! | u, union (loosest) | c ((`∪` \| `+` \| `\|` \| `∨`) c)* | `exprU` |
//! | c, sequence | z ((`⋅` \| `∧` \| `;`) z)* | `exprC` |
//! | z, difference, intersection, xor | q ((`⊕` \| `^` \| `xor` \| `∩` \| `intersect` \| `-` \| `∖`) q)*: one precedence level, grouped to the left (`a ∖ b ∖ c` is `(a ∖ b) ∖ c`, `a ∩ b ⊕ c` is `(a ∩ b) ⊕ c`) | `exprZ` |
//! | q | s `?`* (the marks mean nothing) | `exprQ` |
//! | s, star | n (`⋆` \| `*`)* | `exprS` |
//! | n, negation | (`¬` \| `!`)* a; of a predicate only | `exprN`, `negate` |
//! | a, atom | `∅` \| `⊥` \| `drop` \| `ε` \| `⊤` \| `skip` \| `δ` \| `dup` \| test \| assignment \| `(` e `)` \| name | `exprA`, `empty`, `one`, `dup` |
//! | test | field `=` value `?`* \| field (`≠` \| `!=`) value `?`* (so `@a=3?⋆` is `(@a=3)⋆`, while `(e)?⋆` does not parse) | `test` |
//! | assignment | field (`←` \| `:=`) value | `mut` |
//! | field | `@` then a letter, then letters and digits (no `_`) | `field` |
//! | name | a letter, then letters, digits and `_` (a name that starts with `drop`, `skip` or `dup` reads as that keyword) | `varName` |
//! | value | integer \| name bound to an integer | `value` |
//! | integer | `-`? digits, 32-bit signed | `integer` |
//!
//! rampart's extensions, none of which changes the meaning of a file KATch reads:
//!
//! | extension | form | KATch |
//! | --- | --- | --- |
//! | comment after a statement | `--` to the end of the line, outside a quoted path | comment lines only; `--` elsewhere never parses |
//! | sequence | `·` (U+00B7) as `⋅` | not read |
//! | not equivalent | `=/=` as `≢` | not read |
//! | bounds by name | `for i ∈ lo..hi` and `rangesum @f lo..hi` with names bound to integers | integers only |
//! | value alias | `b = a` with `a` bound to an integer binds `b` to it | an error when `b` is used |
//! | negation | `¬` of any predicate: a name bound to one, or `∖ ∩ ⊕ ⋆` over tests | tests and sums and sequences of them written in place |
//! | quantifiers | `exists`/`forall` over any predicate | a single test |
//! | trailing whitespace | after every statement | refused after an integer binding or an import |
//!
//! Reports name the file line (and column) of a statement's first line, where KATch counts
//! statements.
//!
//! Values are 32-bit signed integers or names bound to one. Values are stored with the sign
//! bit flipped so that their order as `u32` is their order as integers.

pub mod grammar;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap as HashMap;

use crate::netkat::{Counterexample, DUP, Exp, Netkat, ONE, ZERO};
use crate::spp::Prog;
use grammar::{BinOp, Expr, Source, Stmt, Term, Value};

/// A value as stored in the diagrams.
pub fn encode(v: i32) -> u32 {
    (v as u32) ^ 0x8000_0000
}

/// A stored value as written.
pub fn decode(v: u32) -> i32 {
    (v ^ 0x8000_0000) as i32
}

/// The value closest to zero in `lo..=hi` (stored form), for counterexamples.
pub fn near_zero(lo: u32, hi: u32) -> u32 {
    let z = encode(0);
    if hi < z {
        hi
    } else if lo > z {
        lo
    } else {
        z
    }
}

/// Packet `p` written as `@f=v` pairs over fields `fields`.
pub fn show_packet(fields: &[String], p: &[u32]) -> String {
    let mut s = String::new();
    for (i, name) in fields.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let v = p.get(i).copied().unwrap_or(encode(0));
        s.push_str(&format!("@{name}={}", decode(v)));
    }
    if s.is_empty() {
        s.push_str("(no fields)");
    }
    s
}

/// A parse or run error, with where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The file.
    pub file: PathBuf,
    /// Line, from 1 (0 when the file could not be read).
    pub line: usize,
    /// Column in characters, from 1 (0 when not about one place).
    pub col: usize,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.col) {
            (0, _) => write!(f, "{}: {}", self.file.display(), self.message),
            (l, 0) => write!(f, "{}:{l}: {}", self.file.display(), self.message),
            (l, c) => write!(f, "{}:{l}:{c}: {}", self.file.display(), self.message),
        }
    }
}

impl std::error::Error for Error {}

/// The outcome of one `check`.
#[derive(Debug, Clone)]
pub struct Check {
    /// The file and line of the statement.
    pub file: PathBuf,
    /// Line, from 1.
    pub line: usize,
    /// The statement's text.
    pub text: String,
    /// `true` for `≡`, `false` for `≢`.
    pub claims_equal: bool,
    /// Whether the two sides are equivalent (`None`: the node limit was reached).
    pub equal: Option<bool>,
    /// Why they differ, when they do.
    pub counterexample: Option<Counterexample>,
    /// Time to build both sides and compare them.
    pub elapsed: Duration,
    /// The field names at the time of the check (for showing packets).
    pub fields: Vec<String>,
}

impl Check {
    /// Whether the check holds.
    pub fn holds(&self) -> bool {
        self.equal == Some(self.claims_equal)
    }
}

/// Something a statement produced.
#[derive(Debug, Clone)]
pub enum Event {
    /// A `check` ran.
    Check(Check),
    /// `print`, `forward` or `backward`: lines describing a program or packet set.
    Print {
        /// The file.
        file: PathBuf,
        /// Line, from 1.
        line: usize,
        /// What was printed.
        lines: Vec<String>,
    },
    /// `graphviz`: the path it names and the Graphviz text.
    Graphviz {
        /// The file.
        file: PathBuf,
        /// Line, from 1.
        line: usize,
        /// The path as written.
        path: String,
        /// Graphviz text of the expression's program (with `dup` erased).
        dot: String,
    },
}

#[derive(Clone, Copy, Debug)]
enum Binding {
    Value(i32),
    Exp(Exp),
}

/// Lines `print` shows at most.
const PRINT_MAX: usize = 50;
/// Iterations one `for` may run.
const FOR_MAX: i64 = 1_000_000;
/// How deep imports may nest.
const DEPTH_MAX: usize = 256;
/// How deep expressions may nest unless told otherwise (safe on a 2 MiB stack).
pub const NESTING: usize = 100;

/// Runs NKPL files: the expressions, the bindings and the fields seen so far.
#[derive(Debug)]
pub struct Session {
    /// The expressions and programs built.
    pub netkat: Netkat,
    fields: Vec<String>,
    field_ix: HashMap<String, u32>,
    env: HashMap<String, Binding>,
    importing: Vec<PathBuf>,
    nesting: usize,
    /// The loop variables of the `for` statements being run, outermost first.
    looping: Vec<(String, i32)>,
    imports: bool,
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

/// An error inside one statement: offset in it (`None`: about the whole statement) and why.
type StmtError = (Option<usize>, String);

impl Session {
    /// A fresh session.
    pub fn new() -> Self {
        Self {
            netkat: Netkat::new(),
            fields: Vec::new(),
            field_ix: HashMap::default(),
            env: HashMap::default(),
            importing: Vec::new(),
            nesting: NESTING,
            looping: Vec::new(),
            imports: true,
        }
    }

    /// Sets how deeply expressions may nest (parentheses and `for` bodies). Parsing and
    /// checking recurse over the nesting, so the caller's stack must fit it: about 4 KiB per
    /// level is plenty in release builds.
    pub fn set_nesting(&mut self, levels: usize) {
        self.nesting = levels;
    }

    /// Sets the diagram node limit (see [`crate::spp::Programs::set_limit`]).
    pub fn set_limit(&mut self, nodes: usize) {
        self.netkat.set_limit(nodes);
    }

    /// Whether `import` statements may read files (on by default).
    pub fn set_imports(&mut self, allowed: bool) {
        self.imports = allowed;
    }

    /// The fields seen so far, by index.
    pub fn fields(&self) -> &[String] {
        &self.fields
    }

    /// A packet written as `@f=v` pairs.
    pub fn show_packet(&self, p: &[u32]) -> String {
        show_packet(&self.fields, p)
    }

    /// Runs a file's statements, reporting each result to `on`.
    pub fn run_file(&mut self, path: &Path, on: &mut dyn FnMut(Event)) -> Result<(), Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error {
            file: path.to_path_buf(),
            line: 0,
            col: 0,
            message: format!("cannot read: {e}"),
        })?;
        self.run_text(path, &text, on)
    }

    /// Runs NKPL text as if read from `path` (which imports are relative to).
    pub fn run_text(
        &mut self,
        path: &Path,
        text: &str,
        on: &mut dyn FnMut(Event),
    ) -> Result<(), Error> {
        if self.importing.len() >= DEPTH_MAX {
            return Err(Error {
                file: path.to_path_buf(),
                line: 0,
                col: 0,
                message: "imports nest too deeply".into(),
            });
        }
        self.importing.push(path.to_path_buf());
        let r = self.run_statements(path, text, on);
        self.importing.pop();
        r
    }

    fn run_statements(
        &mut self,
        path: &Path,
        text: &str,
        on: &mut dyn FnMut(Event),
    ) -> Result<(), Error> {
        let sources = grammar::statements(text).map_err(|line| Error {
            file: path.to_path_buf(),
            line,
            col: 1,
            message: "an indented line continues a statement, but no statement comes before it"
                .into(),
        })?;
        for src in &sources {
            let error = |(at, message): StmtError| {
                let (line, col) = at.map_or((src.line(), 0), |at| src.place(at));
                Error { file: path.to_path_buf(), line, col, message }
            };
            let stmt = grammar::parse_statement(&src.text, self.nesting)
                .map_err(|e| error((Some(e.at), e.message)))?;
            self.exec(&stmt, src, path, on).map_err(error)?;
        }
        Ok(())
    }

    fn field(&mut self, name: &str) -> u32 {
        if let Some(&f) = self.field_ix.get(name) {
            return f;
        }
        let f = self.fields.len() as u32;
        self.fields.push(name.to_string());
        self.field_ix.insert(name.to_string(), f);
        f
    }

    fn exec(
        &mut self,
        stmt: &Stmt,
        src: &Source,
        file: &Path,
        on: &mut dyn FnMut(Event),
    ) -> Result<(), StmtError> {
        let line = src.line();
        match stmt {
            Stmt::Check { left, equal: claims_equal, right } => {
                let t0 = Instant::now();
                let a = self.eval(left)?;
                let b = self.eval(right)?;
                let fields = self.fields.len();
                let (equal, counterexample) = match self.netkat.equiv(a, b, fields, &near_zero) {
                    Ok(_) => (Some(true), None),
                    Err(Some(c)) => (Some(false), Some(c)),
                    Err(None) => (None, None),
                };
                let mut text = src.one_line();
                for (var, v) in &self.looping {
                    text.push_str(&format!("  [{var}={v}]"));
                }
                on(Event::Check(Check {
                    file: file.to_path_buf(),
                    line,
                    text,
                    claims_equal: *claims_equal,
                    equal,
                    counterexample,
                    elapsed: t0.elapsed(),
                    fields: self.fields.clone(),
                }));
                if equal.is_none() {
                    return Err((None, "gave up: the diagrams grew past the node limit".into()));
                }
                Ok(())
            }
            Stmt::Let(name, Term::Int(v)) => {
                self.env.insert(name.clone(), Binding::Value(*v));
                Ok(())
            }
            Stmt::Let(name, Term::Exp(Expr::Name(other, at))) => {
                // A name alone binds whatever it is bound to (for values, rampart's extension).
                let b = *self.env.get(other).ok_or_else(|| undefined(other, *at))?;
                self.env.insert(name.clone(), b);
                Ok(())
            }
            Stmt::Let(name, Term::Exp(e)) => {
                let e = self.eval(e)?;
                self.env.insert(name.clone(), Binding::Exp(e));
                Ok(())
            }
            Stmt::Import(name) => {
                if !self.imports {
                    return Err((None, "imports are turned off".into()));
                }
                let base = file.parent().unwrap_or(Path::new(""));
                let target = base.join(name);
                let canon = target.canonicalize().unwrap_or(target.clone());
                if self.importing.iter().any(|f| f.canonicalize().ok().as_ref() == Some(&canon)) {
                    return Err((None, format!("import cycle through \"{name}\"")));
                }
                self.run_file(&target, on).map_err(|e| (None, format!("in import: {e}")))
            }
            Stmt::Run { forward, expr } => {
                let e = self.eval(expr)?;
                let prog = if *forward { self.netkat.forward(e) } else { self.netkat.backward(e) };
                let lines = self.describe(prog);
                on(Event::Print { file: file.to_path_buf(), line, lines });
                Ok(())
            }
            Stmt::Print(t) => {
                let lines = match t {
                    Term::Int(v) => vec![v.to_string()],
                    Term::Exp(Expr::Name(n, at)) => match self.env.get(n) {
                        Some(Binding::Value(v)) => vec![v.to_string()],
                        Some(Binding::Exp(e)) => {
                            let prog = self.netkat.erase(*e);
                            self.describe(prog)
                        }
                        None => return Err(undefined(n, *at)),
                    },
                    Term::Exp(e) => {
                        let e = self.eval(e)?;
                        let prog = self.netkat.erase(e);
                        self.describe(prog)
                    }
                };
                on(Event::Print { file: file.to_path_buf(), line, lines });
                Ok(())
            }
            Stmt::For { var, from, to, body } => {
                let lo = self.value(from)?;
                let hi = self.value(to)?;
                if i64::from(hi) - i64::from(lo) >= FOR_MAX {
                    return Err((None, format!("a loop may run at most {FOR_MAX} times")));
                }
                // As in KATch, the variable stays bound to its last value after the loop.
                for i in lo..=hi {
                    self.env.insert(var.clone(), Binding::Value(i));
                    self.looping.push((var.clone(), i));
                    let r = self.exec(body, src, file, on);
                    self.looping.pop();
                    r?;
                }
                Ok(())
            }
            Stmt::Graphviz(path, e) => {
                let e = self.eval(e)?;
                let prog = self.netkat.erase(e);
                let fields = self.fields.clone();
                let dot = self
                    .netkat
                    .programs
                    .dot(prog, &|f| fields[f as usize].clone(), &|v| decode(v).to_string());
                on(Event::Graphviz { file: file.to_path_buf(), line, path: path.clone(), dot });
                Ok(())
            }
        }
    }

    fn describe(&self, prog: Prog) -> Vec<String> {
        let fields = &self.fields;
        let mut lines = self.netkat.programs.describe(
            prog,
            PRINT_MAX + 1,
            &|f| fields[f as usize].clone(),
            &|v| decode(v).to_string(),
        );
        if lines.is_empty() {
            lines.push("∅".into());
        }
        if lines.len() > PRINT_MAX {
            lines.truncate(PRINT_MAX);
            lines.push("…".into());
        }
        lines
    }

    fn value(&self, v: &Value) -> Result<i32, StmtError> {
        match v {
            Value::Int(v) => Ok(*v),
            Value::Name(n, at) => match self.env.get(n) {
                Some(Binding::Value(v)) => Ok(*v),
                Some(Binding::Exp(_)) => {
                    Err((Some(*at), format!("{n} is an expression, not a value")))
                }
                None => Err(undefined(n, *at)),
            },
        }
    }

    /// `e` as a predicate (a program that only filters), for `¬`, `exists` and `forall`.
    fn predicate(&mut self, e: &Expr, at: usize, what: &str) -> Result<Prog, StmtError> {
        let x = self.eval(e)?;
        match self.netkat.as_prog(x) {
            Some(p) if self.netkat.programs.is_filter(p) => Ok(p),
            _ => Err((
                Some(at),
                format!("{what} needs a predicate (tests only, no dup or assignment)"),
            )),
        }
    }

    fn eval(&mut self, e: &Expr) -> Result<Exp, StmtError> {
        Ok(match e {
            Expr::Drop => ZERO,
            Expr::Skip => ONE,
            Expr::Dup => DUP,
            Expr::Test(f, v) | Expr::TestNe(f, v) | Expr::Assign(f, v) => {
                let field = self.field(f);
                let v = encode(self.value(v)?);
                let p = &mut self.netkat.programs;
                let prog = match e {
                    Expr::Test(..) => p.test(field, v),
                    Expr::TestNe(..) => {
                        let t = p.test(field, v);
                        p.not(t)
                    }
                    _ => p.assign(field, v),
                };
                self.netkat.prog(prog)
            }
            Expr::Name(n, at) => match self.env.get(n) {
                Some(Binding::Exp(e)) => *e,
                Some(Binding::Value(_)) => {
                    return Err((Some(*at), format!("{n} is a value, not an expression")));
                }
                None => return Err(undefined(n, *at)),
            },
            Expr::Not(inner, times, at) => {
                let mut x = self.predicate(inner, *at, "¬")?;
                for _ in 0..*times {
                    x = self.netkat.programs.not(x);
                }
                self.netkat.prog(x)
            }
            Expr::Star(inner, times) => {
                let mut x = self.eval(inner)?;
                for _ in 0..*times {
                    x = self.netkat.star(x);
                }
                x
            }
            Expr::Chain(first, rest) => {
                let mut acc = self.eval(first)?;
                for (op, e) in rest {
                    let b = self.eval(e)?;
                    acc = match op {
                        BinOp::Xor => self.netkat.xor(acc, b),
                        BinOp::Inter => self.netkat.inter(acc, b),
                        BinOp::Diff => self.netkat.diff(acc, b),
                    };
                }
                acc
            }
            Expr::Seq(items) => {
                let items: Vec<Exp> =
                    items.iter().map(|e| self.eval(e)).collect::<Result<_, _>>()?;
                let mut acc = ONE;
                for &x in items.iter().rev() {
                    acc = self.netkat.seq(x, acc);
                }
                acc
            }
            Expr::Sum(items) => {
                let items: Vec<Exp> =
                    items.iter().map(|e| self.eval(e)).collect::<Result<_, _>>()?;
                self.netkat.sum(&items)
            }
            Expr::Forward(inner) | Expr::Backward(inner) => {
                let x = self.eval(inner)?;
                let f = if matches!(e, Expr::Forward(_)) {
                    self.netkat.forward(x)
                } else {
                    self.netkat.backward(x)
                };
                self.netkat.prog(f)
            }
            Expr::Exists(f, inner, at) | Expr::Forall(f, inner, at) => {
                let forall = matches!(e, Expr::Forall(..));
                let field = self.field(f);
                let x = self.predicate(inner, *at, if forall { "forall" } else { "exists" })?;
                let r = self.netkat.programs.quantify(field, x, forall);
                self.netkat.prog(r)
            }
            Expr::RangeSum(f, lo, hi) => {
                let field = self.field(f);
                let (lo, hi) = (self.value(lo)?, self.value(hi)?);
                let r = self.netkat.programs.range(field, encode(lo), encode(hi));
                self.netkat.prog(r)
            }
        })
    }
}

fn undefined(name: &str, at: usize) -> StmtError {
    (Some(at), format!("{name} is not defined"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Result<Vec<Check>, Error> {
        let mut s = Session::new();
        let mut out = Vec::new();
        s.run_text(Path::new("test.nkpl"), text, &mut |e| {
            if let Event::Check(c) = e {
                out.push(c);
            }
        })?;
        Ok(out)
    }

    #[test]
    fn encoding_keeps_order() {
        assert!(encode(-1) < encode(0));
        assert!(encode(i32::MIN) < encode(i32::MAX));
        assert_eq!(decode(encode(-7)), -7);
        assert_eq!(decode(near_zero(encode(-5), encode(-2))), -2);
        assert_eq!(decode(near_zero(encode(3), encode(9))), 3);
        assert_eq!(decode(near_zero(encode(-3), encode(9))), 0);
    }

    #[test]
    fn the_tutorial_checks() {
        let text = "\
check ⊥ ≡ ⊥
check ⊥ ≢ ⊤
check (δ⋅δ)⋆ ≢ (δ⋆⋅δ)⋆
check (δ⋅δ⋆)⋆ ≡ (δ⋆⋅δ)⋆
check @a=5 ≡ @a=5 ⋅ @a←5
check @a=5 ≢ @a←5 ⋅ @a=5
check δ⋅@d=3 ≡ @d=3⋅δ
check ∅∪((@b←5⋅ε∪@c←3⋅@a=3)⋅(∅⋆⋅ε))⋆ ≡ ((@b←5⋅ε∪@a=3⋅@c←3)⋅∅⋆)⋆
check (@b←1⋅@b=1)⋆⋆⋅(@e←3⋅@d←5) ≡ @b←1⋆⋆⋅(@d←5⋅@e←3)
";
        let checks = run(text).unwrap();
        assert_eq!(checks.len(), 9);
        for c in &checks {
            assert!(c.holds(), "line {}: {}", c.line, c.text);
        }
    }

    #[test]
    fn ascii_spellings_and_bindings() {
        let text = "\
-- comment
N1 = 1
n2 = -2
same = N1
x = @sw=N1 ; @pt:=n2 + @sw!=same   -- trailing comment
check x ; dup ; x == (@sw=1;@pt:=-2 + !@sw=1) ; dup ; x
check x !== x ; x ; dup
check @a=1 ^ @a=2 == @a=1 + @a=2
check @a=1 intersect @a=2 == drop
check (@a=1 + @a=2) - @a=2 == @a=1
check skip == exists @a (@a=3)
check drop == forall @a (@a=3)
check rangesum @p 1..3 == @p=1 + @p=2 + @p=3
check forward (@a←4) ≡ @a=4
check backward (@a=4 ⋅ δ ⋅ @b←1) ≡ @a=4
for i ∈ 1..3 do check @q=i ⋅ @q=i ≡ @q=i
";
        let checks = run(text).unwrap();
        assert_eq!(checks.len(), 13);
        for c in &checks {
            assert!(c.holds(), "line {}: {} (cx {:?})", c.line, c.text, c.counterexample);
        }
    }

    #[test]
    fn a_failing_check_has_a_counterexample() {
        let checks = run("check @a←1 ⋅ δ ≡ δ ⋅ @a←1\n").unwrap();
        let c = &checks[0];
        assert!(!c.holds());
        let cx = c.counterexample.as_ref().unwrap();
        assert_eq!(cx.trace.len(), 1);
    }

    #[test]
    fn errors_name_the_line_and_column() {
        let e = run("check ⊥ ≡ ⊥\ncheck @a=1 ≡ (@b=2\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 19));
        assert!(e.message.contains("expected )"), "{e}");
        let e = run("x = y\n").unwrap_err();
        assert!(e.message.contains("y is not defined"), "{e}");
        let e = run("check @a=99999999999 ≡ ⊥\n").unwrap_err();
        assert!(e.message.contains("32 bits"), "{e}");
        let e = run("check ¬(@a←1) ≡ ⊥\n").unwrap_err();
        assert!(e.message.contains("predicate"), "{e}");
        let e = run("import \"nowhere.nkpl\"\n").unwrap_err();
        assert!(e.message.contains("cannot read"), "{e}");
        let deep = format!("check {}ε{} ≡ ε\n", "(".repeat(5000), ")".repeat(5000));
        let e = run(&deep).unwrap_err();
        assert!(e.message.contains("too deeply"), "{e}");
    }
}
