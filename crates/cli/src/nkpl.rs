//! `rampart verify nkpl`: runs KATch's NKPL files and reports each `check`.

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rampart_policy::nkpl::{Check, Event, Session, show_packet};

use crate::Fail;

/// The files to run: each file as given, and each directory's `.nkpl` files, sub-folders
/// included, in path order (as `katch run DIR` walks a tree; links to directories are not
/// followed, so a link cycle cannot loop), except those another file of the directory
/// imports: they are parts of their importers (a topology, a routing table) and run through
/// them, not on their own. A directory without any is an error. Also returns how many
/// imported files were left to their importers.
fn expand(paths: &[PathBuf]) -> Result<(Vec<PathBuf>, usize), Fail> {
    let mut out = Vec::new();
    let mut parts = 0;
    for p in paths {
        if p.is_dir() {
            let mut found = Vec::new();
            walk(p, &mut found)?;
            if found.is_empty() {
                return Err(Fail(format!("{}: no .nkpl file in it or below it", p.display()), 2));
            }
            found.sort();
            let imported = parts_of(&found);
            let before = found.len();
            found.retain(|f| !f.canonicalize().is_ok_and(|c| imported.contains(&c)));
            parts += before - found.len();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok((out, parts))
}

/// The files of `files` that run through an importer: those a file that is not itself
/// imported (a top-level file) reaches by its imports, directly or through other imports
/// (canonical paths). Files that only import each other, with no top-level file above them,
/// are not parts: they run, and say what is wrong with them.
fn parts_of(files: &[PathBuf]) -> HashSet<PathBuf> {
    let imports: HashMap<PathBuf, Vec<PathBuf>> =
        files.iter().filter_map(|f| Some((f.canonicalize().ok()?, imports_of(f)))).collect();
    let imported: HashSet<&PathBuf> = imports.values().flatten().collect();
    let mut parts = HashSet::new();
    let mut todo: Vec<&PathBuf> =
        imports.iter().filter(|(f, _)| !imported.contains(f)).flat_map(|(_, i)| i).collect();
    while let Some(f) = todo.pop() {
        if parts.insert(f.clone()) {
            todo.extend(imports.get(f).into_iter().flatten());
        }
    }
    parts
}

/// The files `f` imports (`import "PATH"` statements, relative to `f`), canonical. A statement
/// starts a line; lines that start with a space or a tab continue the one before.
fn imports_of(f: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(f) else { return Vec::new() };
    let dir = f.parent().unwrap_or(Path::new("."));
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("import")?.trim_start().strip_prefix('"')?;
            let (name, _) = rest.split_once('"')?;
            dir.join(name).canonicalize().ok()
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Fail> {
    let rd = std::fs::read_dir(dir)
        .map_err(|e| Fail(format!("{}: cannot list: {e}", dir.display()), 2))?;
    for entry in rd {
        let entry = entry.map_err(|e| Fail(format!("{}: cannot list: {e}", dir.display()), 2))?;
        let path = entry.path();
        let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
        if path.is_dir() {
            if !is_link {
                walk(&path, out)?;
            }
        } else if path.extension().is_some_and(|x| x == "nkpl") {
            out.push(path);
        }
    }
    Ok(())
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 10.0 { format!("{ms:.2} ms") } else { format!("{ms:.0} ms") }
}

fn short(text: &str) -> String {
    const MAX: usize = 100;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(MAX).collect();
        s.push('…');
        s
    }
}

fn report(out: &mut impl std::io::Write, c: &Check) -> std::io::Result<()> {
    let verdict = if c.holds() { "ok  " } else { "fail" };
    let place = format!("{}:{}", c.file.display(), c.line);
    writeln!(out, "{verdict}  {:>9}  {place}  {}", ms(c.elapsed), short(&c.text))?;
    if c.holds() {
        return Ok(());
    }
    match (c.equal, &c.counterexample) {
        (None, _) => writeln!(out, "      gave up: the diagrams grew past the node limit")?,
        (Some(true), _) => writeln!(out, "      the two sides are equivalent")?,
        (Some(false), None) => writeln!(out, "      the two sides differ")?,
        (Some(false), Some(cx)) => {
            writeln!(
                out,
                "      the two sides differ; from input {}",
                show_packet(&c.fields, &cx.input)
            )?;
            for (i, p) in cx.trace.iter().enumerate() {
                writeln!(out, "      dup {:<3} {}", i + 1, show_packet(&c.fields, p))?;
            }
            let side = if cx.left_has_it { "left" } else { "right" };
            writeln!(
                out,
                "      only the {side} side then outputs {}",
                show_packet(&c.fields, &cx.output)
            )?;
        }
    }
    Ok(())
}

/// Writes a `graphviz` statement's diagram under `dir`, or says it was skipped.
fn graphviz(
    out: &mut impl std::io::Write,
    dir: Option<&Path>,
    file: &Path,
    line: usize,
    path: &str,
    text: &str,
    errors: &mut usize,
) -> std::io::Result<()> {
    let at = format!("{}:{line}", file.display());
    let Some(dir) = dir else {
        return writeln!(out, "skip  {at}: graphviz (give --dot DIR to write it)");
    };
    let Some(name) = Path::new(path).file_name() else {
        return writeln!(out, "skip  {at}: graphviz needs a file name");
    };
    let target = dir.join(name).with_extension("dot");
    match std::fs::write(&target, text) {
        Ok(()) => writeln!(out, "wrote {} ({at})", target.display()),
        Err(e) => {
            *errors += 1;
            writeln!(out, "error {at}: cannot write {}: {e}", target.display())
        }
    }
}

/// How deeply expressions may nest: KATch's Stanford translation nests 870 parentheses.
const NESTING: usize = 20_000;
/// The stack the checks run on (parsing and checking recurse over the nesting).
const STACK: usize = 1 << 30;

/// Runs the files on a thread with a stack deep enough for [`NESTING`].
pub(crate) fn run(paths: &[PathBuf], dot: Option<&Path>, limit: usize) -> Result<ExitCode, Fail> {
    let paths = paths.to_vec();
    let dot = dot.map(Path::to_path_buf);
    std::thread::Builder::new()
        .name("nkpl".into())
        .stack_size(STACK)
        .spawn(move || run_on(&paths, dot.as_deref(), limit))
        .map_err(|e| Fail(format!("cannot start the checking thread: {e}"), 2))?
        .join()
        .unwrap_or_else(|_| Err(Fail("the checking thread failed".into(), 2)))
}

/// Runs the files; exit status 0 when every check holds, 1 when one fails, 2 on errors.
fn run_on(paths: &[PathBuf], dot: Option<&Path>, limit: usize) -> Result<ExitCode, Fail> {
    let (files, parts) = expand(paths)?;
    let started = Instant::now();
    let (mut ok, mut failed, mut errors) = (0usize, 0usize, 0usize);
    let stdout = std::io::stdout();
    for file in &files {
        let mut session = Session::new();
        session.set_limit(limit);
        session.set_nesting(NESTING);
        let mut io_error = None;
        let result = {
            let mut on = |e: Event| {
                if io_error.is_some() {
                    return;
                }
                let mut out = stdout.lock();
                let r = match e {
                    Event::Check(c) => {
                        if c.holds() {
                            ok += 1;
                        } else {
                            failed += 1;
                        }
                        report(&mut out, &c)
                    }
                    Event::Print { file, line, lines } => {
                        let mut r = writeln!(out, "print {}:{line}", file.display());
                        for l in lines {
                            r = r.and_then(|_| writeln!(out, "      {l}"));
                        }
                        r
                    }
                    Event::Graphviz { file, line, path, dot: text } => {
                        graphviz(&mut out, dot, &file, line, &path, &text, &mut errors)
                    }
                };
                if let Err(e) = r.and_then(|_| out.flush()) {
                    io_error = Some(e);
                }
            };
            session.run_file(file, &mut on)
        };
        if let Some(e) = io_error {
            return Err(Fail::write("cannot write the report", &e));
        }
        if let Err(e) = result {
            errors += 1;
            eprintln!("rampart: {e}");
        }
    }
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    eprintln!(
        "rampart: {} in {}{}: {ok} hold, {failed} fail{} ({:.2} s)",
        plural(ok + failed, "check"),
        plural(files.len(), "file"),
        if parts > 0 {
            format!(" ({} only imported by others, run through them)", plural(parts, "file"))
        } else {
            String::new()
        },
        if errors > 0 { format!(", {}", plural(errors, "error")) } else { String::new() },
        started.elapsed().as_secs_f64()
    );
    if ok + failed == 0 && errors == 0 {
        return Err(Fail(
            format!("no check found in {}: nothing was verified", plural(files.len(), "file")),
            2,
        ));
    }
    Ok(if errors > 0 {
        ExitCode::from(2)
    } else if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod parts_tests {
    use super::*;

    #[test]
    fn parts_are_what_top_level_files_import_and_cycles_still_run() {
        let dir = tempfile::tempdir().unwrap();
        let put = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let main = put("main.nkpl", "import \"topo.nkpl\"\ncheck topo ≡ topo\n");
        let topo = put("topo.nkpl", "import \"links.nkpl\"\ntopo = links\n");
        let links =
            put("links.nkpl", "links = @sw=1\n   -- import \"main.nkpl\" continues a statement\n");
        let a = put("a.nkpl", "import \"b.nkpl\"\n");
        let b = put("b.nkpl", "import \"a.nkpl\"\n");
        let files = [main.clone(), topo.clone(), links.clone(), a.clone(), b.clone()];
        let parts = parts_of(&files);
        let c = |p: &PathBuf| p.canonicalize().unwrap();
        assert!(parts.contains(&c(&topo)) && parts.contains(&c(&links)));
        assert!(!parts.contains(&c(&main)), "a continuation line imports nothing");
        assert!(!parts.contains(&c(&a)) && !parts.contains(&c(&b)), "a cycle with nothing above");
    }
}
