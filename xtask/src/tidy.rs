//! `cargo xtask tidy`: no two modules of a crate may import each other, directly or round a loop.
//!
//! A module is a file: `lib.rs`, `main.rs` and `mod.rs` stand for their crate or directory. For
//! each crate root (`src/lib.rs`, `src/main.rs`, `src/bin/*.rs`) the module tree is followed
//! through its `mod x;` declarations, and each file's imports become edges: `use crate::…`,
//! `use super::…`, `use self::…`, paths such as `crate::a::b::f()` in code, and paths that start
//! with a name the file brought in (`io::open()` after `use crate::io;`, `cat::run()` after
//! `mod cat;`). A path leads to the deepest module that it names, and through the `pub use`
//! re-exports of the module where it stops (`crate::Error` reaches `error.rs` when `lib.rs` has
//! `pub use error::Error`). A module's `pub use` of its own descendants is its face, not a use:
//! a `lib.rs` or `mod.rs` that only declares and re-exports its children has no edge to them.
//! Code under `#[cfg(test)]` is left out (tests may use anything). The scan reads tokens, not
//! meaning: comments and literals are skipped, macros are not expanded and `#[path]` is ignored.
//! A cycle is a strongly connected component of more than one file.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use xshell::Shell;

use crate::common::step;

pub(crate) fn run(sh: &Shell) -> Result<()> {
    step("module import cycles");
    check_module_cycles(sh)
}

/// Fails with the list of cycles if the modules of any crate import each other.
pub(crate) fn check_module_cycles(sh: &Shell) -> Result<()> {
    let root = sh.current_dir();
    let mut crate_dirs: Vec<PathBuf> = sh.read_dir(root.join("crates"))?.into_iter().filter(|p| p.is_dir()).collect();
    // `crates/*`, xtask and the crates outside the workspace.
    crate_dirs.push(root.join("xtask"));
    crate_dirs.extend(crate::common::OTHER_WORKSPACES.iter().map(|dir| root.join(dir)));
    crate_dirs.sort();
    let mut report = String::new();
    let mut roots = 0;
    for dir in crate_dirs.iter().filter(|dir| dir.join("Cargo.toml").is_file()) {
        let files = read_sources(&dir.join("src"))?;
        for crate_root in crate_roots(&files) {
            roots += 1;
            let graph = module_graph(&files, &crate_root);
            for cycle in cycles(&graph) {
                let shown = dir.strip_prefix(&root).unwrap_or(dir).join("src");
                writeln!(report, "{}: {}", shown.display(), cycle.join(" <-> "))?;
                for (from, to, names) in graph.edges_within(&cycle) {
                    writeln!(report, "    {from} -> {to}: {}", names.join(", "))?;
                }
            }
        }
    }
    if roots == 0 {
        bail!("no crate root found under {}", root.display());
    }
    if !report.is_empty() {
        bail!(
            "modules that import each other (move what they share into a module of its own, \
             which imports neither):\n{report}"
        );
    }
    eprintln!("no module import cycles in {roots} crate roots");
    Ok(())
}

/// Every `.rs` file under `src`, by its path relative to `src` (with `/` separators).
fn read_sources(src: &Path) -> Result<BTreeMap<String, String>> {
    let mut files = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))?;
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
                let relative = path.strip_prefix(src).unwrap_or(&path);
                let key = relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
                files.insert(key, text);
            }
        }
    }
    Ok(files)
}

/// The crate roots among `files`: `lib.rs`, `main.rs`, `bin/*.rs` and `bin/*/main.rs`.
fn crate_roots(files: &BTreeMap<String, String>) -> Vec<String> {
    files
        .keys()
        .filter(|path| {
            let parts: Vec<&str> = path.split('/').collect();
            matches!(parts.as_slice(), ["lib.rs" | "main.rs"] | ["bin", _] | ["bin", _, "main.rs"])
        })
        .cloned()
        .collect()
}

/// The imports between the files of one crate: `from -> to -> paths as written`.
#[derive(Debug, Default)]
struct Graph {
    edges: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
}

impl Graph {
    fn add(&mut self, from: &str, to: &str, written: String) {
        if from != to {
            self.edges.entry(from.to_owned()).or_default().entry(to.to_owned()).or_default().insert(written);
        }
    }

    fn targets(&self, from: &str) -> impl Iterator<Item = &String> {
        self.edges.get(from).into_iter().flat_map(BTreeMap::keys)
    }

    /// The edges between members of `files`, with the paths that make each.
    fn edges_within(&self, files: &[String]) -> Vec<(&str, &str, Vec<&str>)> {
        let mut out = Vec::new();
        for (from, targets) in self.edges.iter().filter(|(from, _)| files.contains(from)) {
            for (to, written) in targets {
                if files.contains(to) {
                    out.push((from.as_str(), to.as_str(), written.iter().map(String::as_str).collect()));
                }
            }
        }
        out
    }
}

/// One module of the tree: its path from the crate root and its file.
#[derive(Debug)]
struct Module {
    path: Vec<String>,
    file: String,
    scan: Scan,
}

/// Builds the import graph of the crate whose root file is `root` (a key of `files`).
fn module_graph(files: &BTreeMap<String, String>, root: &str) -> Graph {
    // The module tree, from the root through `mod x;` declarations.
    let mut modules: Vec<Module> = Vec::new();
    let mut pending = vec![(Vec::new(), root.to_owned())];
    while let Some((path, file)) = pending.pop() {
        let Some(text) = files.get(&file) else { continue };
        if modules.iter().any(|m| m.file == file) {
            continue;
        }
        let scan = scan(text);
        // Where its `mod x;` files are: beside a crate root or a `mod.rs`, else in `name/`.
        let dir = if file == root || file == "mod.rs" || file.ends_with("/mod.rs") {
            file.rsplit_once('/').map_or_else(String::new, |(dir, _)| format!("{dir}/"))
        } else {
            format!("{}/", file.trim_end_matches(".rs"))
        };
        for child in &scan.children {
            let mut child_path = path.clone();
            child_path.push(child.clone());
            let flat = format!("{dir}{child}.rs");
            let nested = format!("{dir}{child}/mod.rs");
            let child_file = if files.contains_key(&flat) { flat } else { nested };
            pending.push((child_path, child_file));
        }
        modules.push(Module { path, file, scan });
    }
    let by_path: BTreeMap<&[String], &Module> = modules.iter().map(|m| (m.path.as_slice(), m)).collect();

    // The names each module brings into scope (children and imports), and its re-exports.
    let mut locals: BTreeMap<&str, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    let mut reexports: BTreeMap<&[String], BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for module in &modules {
        let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for child in &module.scan.children {
            names.insert(child.clone(), [module.path.as_slice(), std::slice::from_ref(child)].concat());
        }
        for item in &module.scan.uses {
            let Some(name) = &item.name else { continue };
            if item.inline_depth > 0 {
                continue;
            }
            if let Some(absolute) = absolute(&item.path, &module.path, 0, &names) {
                if item.public {
                    reexports.entry(module.path.as_slice()).or_default().insert(name.clone(), absolute.clone());
                }
                names.insert(name.clone(), absolute);
            }
        }
        locals.insert(module.file.as_str(), names);
    }

    // The file a path leads to: its deepest module, then through that module's re-exports.
    let resolve = |mut path: Vec<String>| -> Option<&str> {
        for _ in 0..8 {
            let depth = (0..=path.len()).rev().find(|&k| by_path.contains_key(&path[..k]))?;
            let module = by_path[&path[..depth]];
            let next = path.get(depth).and_then(|name| reexports.get(module.path.as_slice())?.get(name));
            match next {
                Some(target) if !target.starts_with(&path[..=depth]) => {
                    path = [target.as_slice(), &path[depth + 1..]].concat();
                }
                _ => return Some(module.file.as_str()),
            }
        }
        None
    };

    let mut graph = Graph::default();
    for module in &modules {
        let names = &locals[module.file.as_str()];
        for item in &module.scan.uses {
            let Some(absolute) = absolute(&item.path, &module.path, item.inline_depth, names) else { continue };
            // A module's face: re-exporting its own descendants is not using them.
            if item.public && absolute.len() > module.path.len() && absolute.starts_with(&module.path) {
                continue;
            }
            if let Some(to) = resolve(absolute) {
                graph.add(&module.file, to, item.path.join("::"));
            }
        }
        for (path, inline_depth) in &module.scan.paths {
            let Some(absolute) = absolute(path, &module.path, *inline_depth, names) else { continue };
            if let Some(to) = resolve(absolute) {
                graph.add(&module.file, to, path.join("::"));
            }
        }
    }
    graph
}

/// The path from the crate root that `path`, written in module `module` at `inline_depth`
/// levels of inline `mod x { … }`, names; `None` outside the crate or inside the same file.
fn absolute(
    path: &[String],
    module: &[String],
    inline_depth: usize,
    locals: &BTreeMap<String, Vec<String>>,
) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    match first.as_str() {
        "crate" => Some(rest.to_vec()),
        "self" if inline_depth == 0 => Some([module, rest].concat()),
        "self" => None,
        "super" => {
            let supers = path.iter().take_while(|s| *s == "super").count();
            let up = supers.checked_sub(inline_depth).filter(|&up| up > 0)?;
            let base = module.get(..module.len().checked_sub(up)?)?;
            Some([base, &path[supers..]].concat())
        }
        name => locals.get(name).map(|target| [target.as_slice(), rest].concat()),
    }
}

/// What one file declares and imports.
#[derive(Debug, Default, PartialEq)]
struct Scan {
    /// `mod x;` declarations (not inline modules, not `#[cfg(test)]`).
    children: Vec<String>,
    /// The leaves of every `use` tree.
    uses: Vec<UseItem>,
    /// Paths of two segments or more written in code (`crate::a::f`, `io::open`), with the
    /// number of inline modules around them.
    paths: Vec<(Vec<String>, usize)>,
}

/// One leaf of a `use` tree: `use a::{b::C as D, e::*}` has `a::b::C` (named `D`) and `a::e::*`.
#[derive(Debug, PartialEq)]
struct UseItem {
    path: Vec<String>,
    /// The name it brings into scope; `None` for a glob or `as _`.
    name: Option<String>,
    /// `pub use`, `pub(crate) use`, …: a re-export.
    public: bool,
    inline_depth: usize,
}

/// A token of Rust source, comments and literals left out.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

/// Splits Rust source into identifiers, `::` and punctuation; skips whitespace, comments,
/// string, byte, char and number literals, and lifetimes.
fn tokenize(text: &str) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let is_ident_start = |c: char| c.is_alphabetic() || c == '_';
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    // The index just past a string whose opening quote is at `i` (`hashes` for raw strings).
    let skip_string = |mut i: usize, raw: Option<usize>| -> usize {
        i += 1;
        while i < chars.len() {
            match (at(i), raw) {
                ('\\', None) => i += 2,
                ('"', None) => return i + 1,
                ('"', Some(hashes)) if (1..=hashes).all(|k| at(i + k) == '#') => return i + 1 + hashes,
                _ => i += 1,
            }
        }
        i
    };
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = at(i);
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && at(i) != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0usize;
            while i < chars.len() {
                if at(i) == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if at(i) == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_string(i, None);
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a), which is skipped too.
            if at(i + 1) == '\\' {
                i += 3;
                while i < chars.len() && at(i) != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
                while i < chars.len() && is_ident(at(i)) {
                    i += 1;
                }
            }
        } else if c.is_ascii_digit() {
            while i < chars.len() && is_ident(at(i)) {
                i += 1;
            }
        } else if is_ident_start(c) {
            let start = i;
            while i < chars.len() && is_ident(at(i)) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let hashes = (i..).take_while(|&k| at(k) == '#').count();
            match word.as_str() {
                "r" | "br" | "cr" if at(i + hashes) == '"' => i = skip_string(i + hashes, Some(hashes)),
                "b" | "c" if at(i) == '"' => i = skip_string(i, None),
                "b" if at(i) == '\'' => {
                    // A byte literal: let the char-literal branch skip it.
                }
                "r" if hashes == 1 && is_ident_start(at(i + 1)) => {
                    // A raw identifier, r#type.
                    let start = i + 1;
                    i = start;
                    while i < chars.len() && is_ident(at(i)) {
                        i += 1;
                    }
                    tokens.push(Tok::Ident(chars[start..i].iter().collect()));
                }
                _ => tokens.push(Tok::Ident(word)),
            }
        } else if c == ':' && at(i + 1) == ':' {
            tokens.push(Tok::PathSep);
            i += 2;
        } else {
            tokens.push(Tok::Punct(c));
            i += 1;
        }
    }
    tokens
}

/// Reads the declarations and imports of one file.
fn scan(text: &str) -> Scan {
    let tokens = tokenize(text);
    let ident = |i: usize| match tokens.get(i) {
        Some(Tok::Ident(word)) => Some(word.as_str()),
        _ => None,
    };
    let is = |i: usize, tok: &Tok| tokens.get(i) == Some(tok);
    let mut out = Scan::default();
    // Open braces, and the brace depth at which each enclosing inline module opened.
    let mut depth = 0usize;
    let mut inline_modules: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Tok::Punct('#') if is(i + 1, &Tok::Punct('[')) => {
                let end = matching(&tokens, i + 1);
                let attr = tokens.get(i + 2..end).unwrap_or_default();
                i = if test_only(attr) { skip_item(&tokens, end + 1) } else { end + 1 };
            }
            Tok::Punct('{') => {
                depth += 1;
                i += 1;
            }
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline_modules.last() == Some(&depth) {
                    inline_modules.pop();
                }
                i += 1;
            }
            Tok::Ident(word) if word == "mod" && ident(i + 1).is_some() => {
                if is(i + 2, &Tok::Punct('{')) {
                    inline_modules.push(depth);
                } else if inline_modules.is_empty()
                    && let Some(name) = ident(i + 1)
                {
                    out.children.push(name.to_owned());
                }
                i += 2;
            }
            Tok::Ident(word) if word == "use" => {
                // `pub use`, `pub(crate) use`, `pub(in path) use`.
                let before = match i.checked_sub(1).map(|k| &tokens[k]) {
                    Some(Tok::Punct(')')) => opening(&tokens, i - 1).and_then(|k| k.checked_sub(1)),
                    _ => i.checked_sub(1),
                };
                let public = before.and_then(ident) == Some("pub");
                let mut leaves = Vec::new();
                let mut at = i + 1;
                use_tree(&tokens, &mut at, Vec::new(), &mut leaves);
                for (path, name) in leaves {
                    out.uses.push(UseItem { path, name, public, inline_depth: inline_modules.len() });
                }
                while at < tokens.len() && !is(at, &Tok::Punct(';')) {
                    at += 1;
                }
                i = at + 1;
            }
            Tok::Ident(first)
                if is(i + 1, &Tok::PathSep)
                    && ident(i + 2).is_some()
                    && !matches!(i.checked_sub(1).map(|k| &tokens[k]), Some(Tok::PathSep | Tok::Punct('.'))) =>
            {
                let mut path = vec![first.clone()];
                let mut at = i + 1;
                while is(at, &Tok::PathSep)
                    && let Some(next) = ident(at + 1)
                {
                    path.push(next.to_owned());
                    at += 2;
                }
                out.paths.push((path, inline_modules.len()));
                i = at;
            }
            _ => i += 1,
        }
    }
    out
}

/// Whether an attribute (the tokens inside `#[…]`) is `cfg(test)` or `cfg(all(…, test, …))`.
fn test_only(attr: &[Tok]) -> bool {
    let test = Tok::Ident("test".to_owned());
    let [Tok::Ident(cfg), Tok::Punct('('), predicate @ .., Tok::Punct(')')] = attr else { return false };
    if cfg != "cfg" {
        return false;
    }
    match predicate {
        [only] => *only == test,
        [Tok::Ident(all), Tok::Punct('('), args @ .., Tok::Punct(')')] if all == "all" => {
            let mut depth = 0usize;
            args.iter().any(|tok| {
                match tok {
                    Tok::Punct('(') => depth += 1,
                    Tok::Punct(')') => depth = depth.saturating_sub(1),
                    _ => {}
                }
                depth == 0 && *tok == test
            })
        }
        _ => false,
    }
}

/// Parses a use tree starting at `*at`, after `prefix`, into `(path, name)` leaves.
fn use_tree(tokens: &[Tok], at: &mut usize, mut prefix: Vec<String>, leaves: &mut Vec<(Vec<String>, Option<String>)>) {
    if prefix.is_empty() && tokens.get(*at) == Some(&Tok::PathSep) {
        // `use ::name`: always an external crate.
        prefix.push("::".to_owned());
        *at += 1;
    }
    loop {
        match tokens.get(*at) {
            Some(Tok::Ident(word)) => {
                *at += 1;
                if word == "self" && !prefix.is_empty() {
                    // `a::{self, …}` imports `a` itself.
                    let name = prefix.last().cloned();
                    leaves.push((prefix, alias(tokens, at).unwrap_or(name)));
                    return;
                }
                prefix.push(word.clone());
                if tokens.get(*at) == Some(&Tok::PathSep) {
                    *at += 1;
                    continue;
                }
                let name = prefix.last().cloned();
                leaves.push((prefix, alias(tokens, at).unwrap_or(name)));
                return;
            }
            Some(Tok::Punct('*')) => {
                *at += 1;
                prefix.push("*".to_owned());
                leaves.push((prefix, None));
                return;
            }
            Some(Tok::Punct('{')) => {
                *at += 1;
                while *at < tokens.len() && tokens.get(*at) != Some(&Tok::Punct('}')) {
                    use_tree(tokens, at, prefix.clone(), leaves);
                    if tokens.get(*at) == Some(&Tok::Punct(',')) {
                        *at += 1;
                    } else if tokens.get(*at) != Some(&Tok::Punct('}')) {
                        // Not a use tree after all (a macro fragment, say): stop here.
                        return;
                    }
                }
                *at += 1;
                return;
            }
            _ => return,
        }
    }
}

/// `as NAME` (or `as _`) at `*at`: `Some(Some(NAME))`, `Some(None)`, or `None` when absent.
fn alias(tokens: &[Tok], at: &mut usize) -> Option<Option<String>> {
    if tokens.get(*at) != Some(&Tok::Ident("as".to_owned())) {
        return None;
    }
    let name = match tokens.get(*at + 1) {
        Some(Tok::Ident(name)) if name != "_" => Some(name.clone()),
        _ => None,
    };
    *at += 2;
    Some(name)
}

/// The index of the bracket that closes the one at `open` (or the end of the tokens).
fn matching(tokens: &[Tok], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, tok) in tokens.iter().enumerate().skip(open) {
        match tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

/// The index of the bracket that opens the one that closes at `close`.
fn opening(tokens: &[Tok], close: usize) -> Option<usize> {
    let mut depth = 0usize;
    for k in (0..=close).rev() {
        match tokens[k] {
            Tok::Punct(')' | ']' | '}') => depth += 1,
            Tok::Punct('(' | '[' | '{') => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// The index just past the item that starts at `start` (its attributes included): after its
/// `;` or the braces of its body, or at the bracket that closes the list it stands in (a field).
fn skip_item(tokens: &[Tok], mut start: usize) -> usize {
    while tokens.get(start) == Some(&Tok::Punct('#')) {
        start = matching(tokens, start + 1) + 1;
    }
    let mut k = start;
    while k < tokens.len() {
        match tokens[k] {
            Tok::Punct(';') => return k + 1,
            Tok::Punct('{') => return matching(tokens, k) + 1,
            Tok::Punct('(' | '[') => k = matching(tokens, k) + 1,
            Tok::Punct(')' | ']' | '}') => return k,
            _ => k += 1,
        }
    }
    k
}

/// The strongly connected components of more than one file (Tarjan), each sorted, in order.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g Graph,
        next: usize,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, node: &'g str) {
        s.index.insert(node, s.next);
        s.low.insert(node, s.next);
        s.next += 1;
        s.stack.push(node);
        s.on_stack.insert(node);
        for target in s.graph.targets(node) {
            let target = target.as_str();
            if !s.index.contains_key(target) {
                visit(s, target);
                let low = s.low[node].min(s.low[target]);
                s.low.insert(node, low);
            } else if s.on_stack.contains(target) {
                let low = s.low[node].min(s.index[target]);
                s.low.insert(node, low);
            }
        }
        if s.low[node] == s.index[node] {
            let mut component = Vec::new();
            while let Some(member) = s.stack.pop() {
                s.on_stack.remove(member);
                component.push(member.to_owned());
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        next: 0,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.edges.keys() {
        if !s.index.contains_key(node.as_str()) {
            visit(&mut s, node);
        }
    }
    s.found.sort();
    s.found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    fn crate_of(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files.iter().map(|(path, text)| ((*path).to_owned(), (*text).to_owned())).collect()
    }

    /// The edges of the crate rooted at `lib.rs`, as `from -> to` lines.
    fn edges(files: &[(&str, &str)]) -> Vec<String> {
        let graph = module_graph(&crate_of(files), "lib.rs");
        graph.edges.iter().flat_map(|(from, tos)| tos.keys().map(move |to| format!("{from} -> {to}"))).collect()
    }

    #[test]
    fn tokenize_skips_comments_literals_and_lifetimes() {
        let tokens = tokenize(
            "a::b // crate::x::y\n/* crate::z /* nested */ */ \"crate::s\\\"\" r#\"crate::r\"# \
             b\"x\" b'\\'' '\"' 'x' 'a: &'a str 1_000u32 r#type c::d",
        );
        let want = vec![
            Tok::Ident("a".into()),
            Tok::PathSep,
            Tok::Ident("b".into()),
            Tok::Punct(':'),
            Tok::Punct('&'),
            Tok::Ident("str".into()),
            Tok::Ident("type".into()),
            Tok::Ident("c".into()),
            Tok::PathSep,
            Tok::Ident("d".into()),
        ];
        assert_eq!(tokens, want);
    }

    #[test]
    fn scan_reads_use_trees_paths_and_children() {
        let scan = scan(
            "mod a;\npub mod b;\nmod inline { use super::x::Y; }\n\
             use crate::{c::{self, D as E}, f::*};\npub(crate) use self::a::G;\nuse ::ext::H;\n\
             fn f() { crate::k::l(); x.y::<u8>(); std::mem::drop(1); }\n\
             #[cfg(test)]\nmod tests { use crate::t::T; }\n#[cfg(test)]\nmod more;\n\
             #[cfg(all(unix, test))]\nuse crate::u::U;\n#[cfg(any(test, unix))]\nuse crate::v::V;\n\
             struct S { #[cfg(test)]\nfield: crate::w::W }\nfn g() { crate::z::z(); }\n",
        );
        assert_eq!(scan.children, strings(&["a", "b"]));
        let uses: Vec<(Vec<String>, Option<String>, bool, usize)> =
            scan.uses.into_iter().map(|u| (u.path, u.name, u.public, u.inline_depth)).collect();
        assert_eq!(
            uses,
            vec![
                (strings(&["super", "x", "Y"]), Some("Y".into()), false, 1),
                (strings(&["crate", "c"]), Some("c".into()), false, 0),
                (strings(&["crate", "c", "D"]), Some("E".into()), false, 0),
                (strings(&["crate", "f", "*"]), None, false, 0),
                (strings(&["self", "a", "G"]), Some("G".into()), true, 0),
                (strings(&["::", "ext", "H"]), Some("H".into()), false, 0),
                (strings(&["crate", "v", "V"]), Some("V".into()), false, 0),
            ]
        );
        let paths = vec![
            (strings(&["crate", "k", "l"]), 0),
            (strings(&["std", "mem", "drop"]), 0),
            (strings(&["crate", "z", "z"]), 0),
        ];
        assert_eq!(scan.paths, paths);
    }

    #[test]
    fn paths_lead_to_the_deepest_module_and_through_re_exports() {
        let files = [
            ("lib.rs", "mod a;\nmod e;\npub use e::Error;\n"),
            ("a.rs", "mod b;\nuse crate::a::b::C;\nuse crate::Error;\n"),
            ("a/b.rs", "fn f() { crate::a::g(); super::h(); }"),
            ("e.rs", ""),
        ];
        assert_eq!(edges(&files), ["a.rs -> a/b.rs", "a.rs -> e.rs", "a/b.rs -> a.rs"]);
    }

    #[test]
    fn a_face_is_not_a_use_but_calling_a_child_is() {
        let face = [
            ("lib.rs", "mod a;\nmod b;\npub use self::a::A;\npub(crate) use crate::b::B;\nconst N: u8 = 1;\n"),
            ("a.rs", "use crate::N;\nuse crate::B;\n"),
            ("b.rs", "use super::N;\n"),
        ];
        assert_eq!(edges(&face), ["a.rs -> b.rs", "a.rs -> lib.rs", "b.rs -> lib.rs"]);
        assert!(cycles(&module_graph(&crate_of(&face), "lib.rs")).is_empty());
        let user = [("lib.rs", "mod a;\nfn main() { a::run(); }\nstruct Shared;\n"), ("a.rs", "use crate::Shared;\n")];
        assert_eq!(cycles(&module_graph(&crate_of(&user), "lib.rs")), vec![strings(&["a.rs", "lib.rs"])]);
    }

    #[test]
    fn imported_modules_and_nested_files_resolve() {
        let files = [
            ("lib.rs", "pub mod x;\nmod y;\n"),
            ("x/mod.rs", "mod z;\n"),
            ("x/z.rs", "use crate::y;\nfn f() { y::g(); }\n"),
            ("y.rs", "use crate::x::z as zz;\nfn g() { zz::f(); }\n#[cfg(test)]\nmod tests { use crate::x::*; }\n"),
        ];
        assert_eq!(edges(&files), ["x/z.rs -> y.rs", "y.rs -> x/z.rs"]);
        assert_eq!(cycles(&module_graph(&crate_of(&files), "lib.rs")), vec![strings(&["x/z.rs", "y.rs"])]);
    }

    #[test]
    fn cycles_are_components_of_more_than_one_file() {
        let mut graph = Graph::default();
        for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d"), ("f", "a")] {
            graph.add(from, to, String::new());
        }
        graph.add("g", "g", String::new());
        assert_eq!(cycles(&graph), vec![strings(&["a", "b", "c"]), strings(&["d", "e"])]);
    }

    #[test]
    fn crate_roots_are_lib_main_and_bins() {
        let files =
            crate_of(&[("lib.rs", ""), ("a.rs", ""), ("bin/x.rs", ""), ("bin/y/main.rs", ""), ("bin/y/z.rs", "")]);
        assert_eq!(crate_roots(&files), strings(&["bin/x.rs", "bin/y/main.rs", "lib.rs"]));
    }
}
