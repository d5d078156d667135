//! NKPL, KATch's NetKAT language: a parser and a runner for its statements.
//!
//! One statement per line; `--` starts a comment. Statements:
//! `check e1 ≡ e2` (also `==`), `check e1 ≢ e2` (also `!==`), `name = e` or `name = 42`,
//! `import "file"` (relative to the importing file), `for i ∈ a..b do statement` (also `in`
//! or `=`; `a..b` inclusive), `print e`, `forward e`, `backward e` and
//! `graphviz "path" e`.
//!
//! Expressions, loosest first (each operator also has the ASCII spelling in brackets):
//! - `forward e`, `backward e`, `exists @f e`, `forall @f e`, `rangesum @f a..b`;
//! - union `∪` (`+`, `|`, `∨`);
//! - sequence `⋅` (`;`, `∧`);
//! - `⊕` (`^`, `xor`), `∩` (`intersect`), `∖` (`-`), grouping to the right as in KATch;
//! - a postfix `?` (no effect: it marks a filter);
//! - star `⋆` (`*`);
//! - negation `¬` (`!`), of a predicate only;
//! - atoms: `∅` `⊥` (`drop`), `ε` `⊤` (`skip`), `δ` (`dup`), a name bound by `=`,
//!   `@f=v`, `@f≠v` (`!=`), `@f←v` (`:=`), and parentheses.
//!
//! Values are 32-bit signed integers or names bound to one. Values are stored with the sign
//! bit flipped so that their order as `u32` is their order as integers.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap as HashMap;

use crate::netkat::{Counterexample, DUP, Exp, Netkat, ONE, ZERO};
use crate::spp::Prog;

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

    /// Sets how deeply expressions may nest (parentheses and `∖ ∩ ⊕` chains). Parsing and
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
        let r = self.run_lines(path, text, on);
        self.importing.pop();
        r
    }

    fn run_lines(
        &mut self,
        path: &Path,
        text: &str,
        on: &mut dyn FnMut(Event),
    ) -> Result<(), Error> {
        for (i, raw) in text.split('\n').enumerate() {
            let line: Vec<char> = strip_comment(raw).chars().collect();
            if line.iter().all(|c| c.is_whitespace()) {
                continue;
            }
            let mut p = Parser { s: &line, at: 0, depth: 0, max: self.nesting };
            self.statement(&mut p, path, i + 1, on).map_err(|(col, message)| Error {
                file: path.to_path_buf(),
                line: i + 1,
                col,
                message,
            })?;
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

    fn statement(
        &mut self,
        p: &mut Parser<'_>,
        file: &Path,
        line: usize,
        on: &mut dyn FnMut(Event),
    ) -> Result<(), (usize, String)> {
        p.ws();
        let start = p.at;
        let word = p.peek_word();
        match word.as_deref() {
            Some("check") => {
                p.word();
                let t0 = Instant::now();
                let a = self.expr(p)?;
                p.ws();
                let claims_equal = if p.eat("≡") || p.eat("==") {
                    true
                } else if p.eat("≢") || p.eat("!==") || p.eat("=/=") {
                    false
                } else {
                    return Err(p.err("expected ≡ or ≢"));
                };
                let b = self.expr(p)?;
                p.end()?;
                let fields = self.fields.len();
                let (equal, counterexample) = match self.netkat.equiv(a, b, fields, &near_zero) {
                    Ok(_) => (Some(true), None),
                    Err(Some(c)) => (Some(false), Some(c)),
                    Err(None) => (None, None),
                };
                let mut text: String = p.s[start..].iter().collect::<String>().trim().to_string();
                for (var, v) in &self.looping {
                    text.push_str(&format!("  [{var}={v}]"));
                }
                on(Event::Check(Check {
                    file: file.to_path_buf(),
                    line,
                    text,
                    claims_equal,
                    equal,
                    counterexample,
                    elapsed: t0.elapsed(),
                    fields: self.fields.clone(),
                }));
                if equal.is_none() {
                    return Err((0, "gave up: the diagrams grew past the node limit".into()));
                }
                Ok(())
            }
            Some("import") => {
                p.word();
                let name = p.string()?;
                p.end()?;
                if !self.imports {
                    return Err((0, "imports are turned off".into()));
                }
                let base = file.parent().unwrap_or(Path::new(""));
                let target = base.join(&name);
                let canon = target.canonicalize().unwrap_or(target.clone());
                if self.importing.iter().any(|f| f.canonicalize().ok().as_ref() == Some(&canon)) {
                    return Err((0, format!("import cycle through \"{name}\"")));
                }
                self.run_file(&target, on).map_err(|e| (0, format!("in import: {e}")))
            }
            Some("for") => {
                p.word();
                p.ws();
                let var = p.word().ok_or_else(|| p.err("expected a loop variable"))?;
                p.ws();
                if !(p.eat("∈") || p.eat_word("in") || p.eat("=")) {
                    return Err(p.err("expected ∈"));
                }
                let lo = self.value(p)?;
                p.ws();
                if !p.eat("..") {
                    return Err(p.err("expected .."));
                }
                let hi = self.value(p)?;
                p.ws();
                if !p.eat_word("do") {
                    return Err(p.err("expected do"));
                }
                if i64::from(hi) - i64::from(lo) >= FOR_MAX {
                    return Err(p.err(&format!("a loop may run at most {FOR_MAX} times")));
                }
                let body = p.at;
                let saved = self.env.get(&var).copied();
                for i in lo..=hi {
                    self.env.insert(var.clone(), Binding::Value(i));
                    p.at = body;
                    self.looping.push((var.clone(), i));
                    let r = self.statement(p, file, line, on);
                    self.looping.pop();
                    r?;
                }
                match saved {
                    Some(b) => self.env.insert(var, b),
                    None => self.env.remove(&var),
                };
                Ok(())
            }
            Some("print" | "forward" | "backward") => {
                let w = p.word().unwrap_or_default();
                let e = self.expr(p)?;
                p.end()?;
                let prog = match w.as_str() {
                    "forward" => self.netkat.forward(e),
                    "backward" => self.netkat.backward(e),
                    _ => self.netkat.erase(e),
                };
                let lines = self.describe(prog);
                on(Event::Print { file: file.to_path_buf(), line, lines });
                Ok(())
            }
            Some("graphviz") => {
                p.word();
                let path = p.string()?;
                let e = self.expr(p)?;
                p.end()?;
                let prog = self.netkat.erase(e);
                let fields = self.fields.clone();
                let dot = self
                    .netkat
                    .programs
                    .dot(prog, &|f| fields[f as usize].clone(), &|v| decode(v).to_string());
                on(Event::Graphviz { file: file.to_path_buf(), line, path, dot });
                Ok(())
            }
            Some(_) => {
                let name = p.word().unwrap_or_default();
                p.ws();
                if !p.eat("=") {
                    return Err(p.err("expected a statement (check, import, for, print, name = …)"));
                }
                p.ws();
                let save = p.at;
                if let Some(v) = p.integer() {
                    p.ws();
                    if p.done() {
                        self.env.insert(name, Binding::Value(v.map_err(|m| p.err(&m))?));
                        return Ok(());
                    }
                }
                p.at = save;
                if let Some(w) = p.word() {
                    p.ws();
                    if let (true, Some(&b)) = (p.done(), self.env.get(&w)) {
                        self.env.insert(name, b);
                        return Ok(());
                    }
                }
                p.at = save;
                let e = self.expr(p)?;
                p.end()?;
                self.env.insert(name, Binding::Exp(e));
                Ok(())
            }
            None => Err(p.err("expected a statement")),
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

    fn value(&mut self, p: &mut Parser<'_>) -> Result<i32, (usize, String)> {
        p.ws();
        if let Some(v) = p.integer() {
            return v.map_err(|m| p.err(&m));
        }
        let at = p.at;
        let Some(w) = p.word() else {
            return Err(p.err("expected a value"));
        };
        match self.env.get(&w) {
            Some(Binding::Value(v)) => Ok(*v),
            Some(Binding::Exp(_)) => Err((at + 1, format!("{w} is an expression, not a value"))),
            None => Err((at + 1, format!("{w} is not defined"))),
        }
    }

    fn field_name(&mut self, p: &mut Parser<'_>) -> Result<u32, (usize, String)> {
        p.ws();
        if !p.eat("@") {
            return Err(p.err("expected a field (@name)"));
        }
        let name = p.word().ok_or_else(|| p.err("expected a field name"))?;
        Ok(self.field(&name))
    }

    fn as_prog(&self, e: Exp, what: &str, p: &Parser<'_>) -> Result<Prog, (usize, String)> {
        match self.netkat.as_prog(e) {
            Some(x) if self.netkat.programs.is_filter(x) => Ok(x),
            _ => {
                Err(p.err(&format!("{what} needs a predicate (tests only, no dup or assignment)")))
            }
        }
    }

    fn expr(&mut self, p: &mut Parser<'_>) -> Result<Exp, (usize, String)> {
        p.ws();
        match p.peek_word().as_deref() {
            Some("forward") => {
                p.word();
                let e = self.union(p)?;
                let f = self.netkat.forward(e);
                Ok(self.netkat.prog(f))
            }
            Some("backward") => {
                p.word();
                let e = self.union(p)?;
                let f = self.netkat.backward(e);
                Ok(self.netkat.prog(f))
            }
            Some(q @ ("exists" | "forall")) => {
                let forall = q == "forall";
                p.word();
                let f = self.field_name(p)?;
                let e = self.union(p)?;
                let x = self.as_prog(e, q, p)?;
                let r = self.netkat.programs.quantify(f, x, forall);
                Ok(self.netkat.prog(r))
            }
            Some("rangesum") => {
                p.word();
                let f = self.field_name(p)?;
                let lo = self.value(p)?;
                p.ws();
                if !p.eat("..") {
                    return Err(p.err("expected .."));
                }
                let hi = self.value(p)?;
                let r = self.netkat.programs.range(f, encode(lo), encode(hi));
                Ok(self.netkat.prog(r))
            }
            _ => self.union(p),
        }
    }

    fn union(&mut self, p: &mut Parser<'_>) -> Result<Exp, (usize, String)> {
        let mut items = vec![self.seq(p)?];
        loop {
            p.ws();
            if p.eat("∪") || p.eat("∨") || p.eat("+") || p.eat("|") {
                items.push(self.seq(p)?);
            } else {
                return Ok(self.netkat.sum(&items));
            }
        }
    }

    fn seq(&mut self, p: &mut Parser<'_>) -> Result<Exp, (usize, String)> {
        let mut items = vec![self.zed(p)?];
        loop {
            p.ws();
            if p.eat("⋅") || p.eat("∧") || p.eat(";") || p.eat("·") {
                items.push(self.zed(p)?);
            } else {
                let mut e = ONE;
                for &x in items.iter().rev() {
                    e = self.netkat.seq(x, e);
                }
                return Ok(e);
            }
        }
    }

    fn zed(&mut self, p: &mut Parser<'_>) -> Result<Exp, (usize, String)> {
        let a = self.question(p)?;
        p.ws();
        let op = if p.eat("⊕") || p.eat("^") || p.eat_word("xor") {
            2
        } else if p.eat("∩") || p.eat_word("intersect") {
            0
        } else if p.eat("∖") || p.eat("-") {
            1
        } else {
            return Ok(a);
        };
        p.depth += 1;
        if p.depth > p.max {
            return Err(p.err("expression nests too deeply"));
        }
        let b = self.zed(p)?;
        p.depth -= 1;
        Ok(match op {
            0 => self.netkat.inter(a, b),
            1 => self.netkat.diff(a, b),
            _ => self.netkat.xor(a, b),
        })
    }

    fn question(&mut self, p: &mut Parser<'_>) -> Result<Exp, (usize, String)> {
        let e = self.star(p)?;
        loop {
            p.ws();
            if !p.eat("?") {
                return Ok(e);
            }
        }
    }

    fn star(&mut self, p: &mut Parser<'_>) -> Result<Exp, (usize, String)> {
        let mut e = self.negation(p)?;
        loop {
            p.ws();
            if p.eat("⋆") || p.eat("*") {
                e = self.netkat.star(e);
            } else {
                return Ok(e);
            }
        }
    }

    fn negation(&mut self, p: &mut Parser<'_>) -> Result<Exp, (usize, String)> {
        p.ws();
        let mut n = 0;
        while p.eat("¬") || (p.peek_is("!") && !p.peek_is("!=") && p.eat("!")) {
            n += 1;
            p.ws();
        }
        let e = self.atom(p)?;
        if n % 2 == 0 {
            return Ok(e);
        }
        let x = self.as_prog(e, "¬", p)?;
        let r = self.netkat.programs.not(x);
        Ok(self.netkat.prog(r))
    }

    fn atom(&mut self, p: &mut Parser<'_>) -> Result<Exp, (usize, String)> {
        p.ws();
        if p.eat("∅") || p.eat("⊥") || p.eat_word("drop") {
            return Ok(ZERO);
        }
        if p.eat("ε") || p.eat("⊤") || p.eat_word("skip") {
            return Ok(ONE);
        }
        if p.eat("δ") || p.eat_word("dup") {
            return Ok(DUP);
        }
        if p.eat("(") {
            p.depth += 1;
            if p.depth > p.max {
                return Err(p.err("expression nests too deeply"));
            }
            let e = self.expr(p)?;
            p.depth -= 1;
            p.ws();
            if !p.eat(")") {
                return Err(p.err("expected )"));
            }
            return Ok(e);
        }
        if p.peek_is("@") {
            let f = self.field_name(p)?;
            p.ws();
            let programs = &mut self.netkat.programs;
            let prog = if p.eat("≠") || p.eat("!=") {
                let v = self.value(p)?;
                let t = self.netkat.programs.test(f, encode(v));
                self.netkat.programs.not(t)
            } else if p.eat("←") || p.eat(":=") {
                let v = self.value(p)?;
                self.netkat.programs.assign(f, encode(v))
            } else if p.eat("=") {
                let _ = programs;
                let v = self.value(p)?;
                self.netkat.programs.test(f, encode(v))
            } else {
                return Err(p.err("expected =, ≠ or ← after the field"));
            };
            return Ok(self.netkat.prog(prog));
        }
        let at = p.at;
        if let Some(w) = p.word() {
            return match self.env.get(&w) {
                Some(Binding::Exp(e)) => Ok(*e),
                Some(Binding::Value(_)) => {
                    Err((at + 1, format!("{w} is a value, not an expression")))
                }
                None => Err((at + 1, format!("{w} is not defined"))),
            };
        }
        Err(p.err("expected an expression"))
    }
}

/// The line without its `--` comment (outside a quoted string).
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
    line.trim_end_matches('\r')
}

struct Parser<'a> {
    s: &'a [char],
    at: usize,
    depth: usize,
    max: usize,
}

fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_whitespace() {
            self.at += 1;
        }
    }

    fn done(&self) -> bool {
        self.at >= self.s.len()
    }

    fn end(&mut self) -> Result<(), (usize, String)> {
        self.ws();
        if self.done() { Ok(()) } else { Err(self.err("unexpected text")) }
    }

    fn err(&self, m: &str) -> (usize, String) {
        let near: String = self.s[self.at.min(self.s.len())..].iter().take(20).collect();
        if near.is_empty() {
            (self.at + 1, format!("{m} at the end of the line"))
        } else {
            (self.at + 1, format!("{m} before \"{near}\""))
        }
    }

    fn peek_is(&self, t: &str) -> bool {
        (self.at..).zip(t.chars()).all(|(i, c)| self.s.get(i) == Some(&c))
    }

    fn eat(&mut self, t: &str) -> bool {
        if self.peek_is(t) {
            self.at += t.chars().count();
            true
        } else {
            false
        }
    }

    /// Eats a whole word equal to `w`.
    fn eat_word(&mut self, w: &str) -> bool {
        if self.peek_word().as_deref() == Some(w) {
            self.at += w.len();
            true
        } else {
            false
        }
    }

    fn peek_word(&self) -> Option<String> {
        let first = *self.s.get(self.at)?;
        if !first.is_ascii_alphabetic() {
            return None;
        }
        let mut i = self.at;
        while i < self.s.len() && word_char(self.s[i]) {
            i += 1;
        }
        Some(self.s[self.at..i].iter().collect())
    }

    fn word(&mut self) -> Option<String> {
        self.ws();
        let w = self.peek_word()?;
        self.at += w.len();
        Some(w)
    }

    fn string(&mut self) -> Result<String, (usize, String)> {
        self.ws();
        if !self.eat("\"") {
            return Err(self.err("expected a quoted path"));
        }
        let start = self.at;
        while self.at < self.s.len() && self.s[self.at] != '"' {
            self.at += 1;
        }
        if self.done() {
            return Err(self.err("unterminated string"));
        }
        let s: String = self.s[start..self.at].iter().collect();
        self.at += 1;
        Ok(s)
    }

    /// An integer literal, if one starts here; `Err` if it does not fit 32 bits.
    fn integer(&mut self) -> Option<Result<i32, String>> {
        self.ws();
        let start = self.at;
        let mut i = self.at;
        if self.s.get(i) == Some(&'-') {
            i += 1;
        }
        let digits = i;
        while i < self.s.len() && self.s[i].is_ascii_digit() {
            i += 1;
        }
        if i == digits || self.s.get(i).is_some_and(|&c| word_char(c)) {
            return None;
        }
        self.at = i;
        let text: String = self.s[start..i].iter().collect();
        Some(text.parse::<i32>().map_err(|_| format!("{text} does not fit in 32 bits")))
    }
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
