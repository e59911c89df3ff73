//! Every path into another top-level module that the production code of a crate names: a small
//! lexer (comments, strings, chars and lifetimes told apart, so `crate::` in a comment or a
//! string is not a reference), then a walk of the module tree from `lib.rs` that follows `mod x;`
//! declarations, leaves out whatever `#[cfg(test)]` guards, expands grouped imports
//! (`use crate::{a::X, b::{Y, Z}}`) and resolves `super::` and `self::` against the module a path
//! sits in. Paths inside macro invocations are tokens like any other, so `matches!(e,
//! crate::x::Y)` counts too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One path to an item of the crate, as the file names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reference {
    /// The file, relative to the crate root (`src/plan/mod.rs`).
    pub(crate) file: String,
    /// 1-based line of the path's last segment (the imported name in a grouped import).
    pub(crate) line: usize,
    /// The top-level module the file belongs to.
    pub(crate) from: String,
    /// The absolute path, `crate::` first and `self` segments dropped (`crate::tls::TlsInfo`).
    pub(crate) path: String,
    /// The top-level module the path leads into: its first segment, or for an exported macro
    /// (`crate::usage_bail`) the module that defines it.
    pub(crate) to: String,
}

/// What the production code of the crate at `root` (which holds `src/lib.rs`) declares and names.
pub(crate) struct Crate {
    /// The modules `src/lib.rs` declares outside `#[cfg(test)]`.
    pub(crate) top_modules: Vec<String>,
    /// Every path into the crate from a file below a top-level module, including the paths a
    /// macro of `src/lib.rs` names (`out!` names `$crate::console::write`) where it is invoked.
    pub(crate) references: Vec<Reference>,
    /// Each module that has a file of its own (`plan::route`), with that file
    /// (`src/plan/route.rs`); inline modules live in the file that holds them.
    pub(crate) files: BTreeMap<String, String>,
}

/// Scans the crate at `root`; an unreadable file or a `mod x;` with no file is an error.
pub(crate) fn scan(root: &Path) -> Result<Crate, String> {
    let mut top_modules = Vec::new();
    let mut references = Vec::new();
    // The macros of lib.rs: name → (paths, macros named); module macros: name → module.
    let mut root_macros = BTreeMap::new();
    let mut module_macros = BTreeMap::new();
    let mut invocations = Vec::new();
    let mut files = BTreeMap::new();
    let mut pending = vec![(root.join("src/lib.rs"), Vec::<String>::new())];
    while let Some((file, module)) = pending.pop() {
        let text = std::fs::read_to_string(&file)
            .map_err(|error| format!("cannot read {}: {error}", file.display()))?;
        let relative = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        let found = scan_file(&lex(&text), &module);
        files.insert(module.join("::"), relative.clone());
        if let Some(line) = found.unsupported.first() {
            return Err(format!(
                "{relative}:{line}: #[path], or #[cfg(test)] on something other than an item: \
                 tests/it/layers/scan.rs cannot tell which code this leaves in or out"
            ));
        }
        if let Some(top) = module.first() {
            let at = |line| (relative.clone(), line, top.clone());
            references.extend(found.paths.into_iter().map(|(line, path)| (at(line), path)));
            invocations.extend(
                found
                    .invocations
                    .into_iter()
                    .map(|(line, name)| (at(line), name)),
            );
            module_macros.extend(
                found
                    .macros
                    .into_iter()
                    .map(|(name, ..)| (name, top.clone())),
            );
        } else {
            top_modules = found
                .children
                .iter()
                .filter_map(|child| child.last().cloned())
                .collect();
            root_macros.extend(
                found
                    .macros
                    .into_iter()
                    .map(|(name, paths, named)| (name, (paths, named))),
            );
        }
        for child in found.children {
            pending.push((child_file(&file, &module, &child)?, child));
        }
    }
    for (at, name) in invocations {
        let mut expanded: BTreeSet<&String> = BTreeSet::new();
        let mut pending = vec![&name];
        while let Some(name) = pending.pop() {
            if let Some((paths, named)) = root_macros.get(name) {
                if expanded.insert(name) {
                    references.extend(paths.iter().map(|path| (at.clone(), path.clone())));
                    pending.extend(named);
                }
            }
        }
    }
    let mut references: Vec<Reference> = references
        .into_iter()
        .map(|((file, line, from), path)| {
            let first = path.split("::").nth(1).unwrap_or_default();
            // A segment that is no module is an item of the root: an exported macro.
            let to = match module_macros.get(first) {
                Some(module) if !top_modules.iter().any(|top| top == first) => module.clone(),
                _ => first.to_string(),
            };
            Reference {
                file,
                line,
                from,
                path,
                to,
            }
        })
        .collect();
    references.sort_by(|a, b| (&a.file, a.line, &a.path).cmp(&(&b.file, b.line, &b.path)));
    references.dedup();
    Ok(Crate {
        top_modules,
        references,
        files,
    })
}

/// The file of module `child` (a full module path) declared by `parent` (the file of `module`):
/// `dir/name.rs` or `dir/name/mod.rs`, where `dir` is the folder of a `lib.rs` or `mod.rs` and
/// `a/b/` for a file `a/b.rs`; the inline modules between `module` and `child` add folders.
fn child_file(parent: &Path, module: &[String], child: &[String]) -> Result<PathBuf, String> {
    let owns_folder = matches!(
        parent.file_name().and_then(|name| name.to_str()),
        Some("lib.rs" | "mod.rs")
    );
    let mut dir = if owns_folder {
        parent.with_file_name("")
    } else {
        parent.with_extension("")
    };
    for inline in &child[module.len()..child.len() - 1] {
        dir.push(inline);
    }
    let name = &child[child.len() - 1];
    let candidates = [
        dir.join(format!("{name}.rs")),
        dir.join(name).join("mod.rs"),
    ];
    candidates
        .iter()
        .find(|candidate| candidate.is_file())
        .cloned()
        .ok_or_else(|| format!("{}: no file for `mod {name};`", parent.display()))
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
    /// A string, char or number literal, or a lifetime: nothing a path can start with.
    Literal,
}

/// The tokens of `text` with their 1-based lines; comments and whitespace dropped.
fn lex(text: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let (end, token) = next_token(&chars, i);
        if let Some(token) = token {
            tokens.push((token, line));
        }
        line += chars[i..end].iter().filter(|&&c| c == '\n').count();
        i = end;
    }
    tokens
}

/// The token that starts at `i` (`None` for whitespace and comments) and the index after it.
fn next_token(chars: &[char], i: usize) -> (usize, Option<Token>) {
    let c = chars[i];
    let next = chars.get(i + 1).copied();
    if c.is_whitespace() {
        (i + 1, None)
    } else if c == '/' && next == Some('/') {
        (
            chars[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(chars.len(), |n| i + n),
            None,
        )
    } else if c == '/' && next == Some('*') {
        (block_comment_end(chars, i), None)
    } else if c == '"' {
        (quoted_end(chars, i + 1, '"'), Some(Token::Literal))
    } else if c == '\'' {
        // 'x', '\n', '\u{..}' are chars; 'a (no closing quote after one char) a lifetime.
        if next == Some('\\') || chars.get(i + 2) == Some(&'\'') {
            (quoted_end(chars, i + 1, '\''), Some(Token::Literal))
        } else {
            (ident_end(chars, i + 1), Some(Token::Literal))
        }
    } else if c.is_ascii_digit() {
        (ident_end(chars, i), Some(Token::Literal))
    } else if c.is_alphabetic() || c == '_' {
        let end = ident_end(chars, i);
        let word: String = chars[i..end].iter().collect();
        match (word.as_str(), chars.get(end)) {
            ("r" | "br" | "cr", Some('"' | '#')) if raw_string_start(chars, end) => {
                (raw_string_end(chars, end), Some(Token::Literal))
            }
            ("b" | "c", Some('"')) => (quoted_end(chars, end + 1, '"'), Some(Token::Literal)),
            ("b", Some('\'')) => (quoted_end(chars, end + 1, '\''), Some(Token::Literal)),
            // r#ident: the identifier itself.
            ("r", Some('#')) => {
                let raw_end = ident_end(chars, end + 1);
                (
                    raw_end,
                    Some(Token::Ident(chars[end + 1..raw_end].iter().collect())),
                )
            }
            _ => (end, Some(Token::Ident(word))),
        }
    } else if c == ':' && next == Some(':') {
        (i + 2, Some(Token::PathSep))
    } else if c == '$' && next == Some('c') {
        // `$crate::x` in a macro is `crate::x` of this crate.
        (i + 1, None)
    } else {
        (i + 1, Some(Token::Punct(c)))
    }
}

fn ident_end(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
        i += 1;
    }
    i
}

/// The index after the closing `quote` of a literal whose content starts at `i` (`\` escapes).
fn quoted_end(chars: &[char], mut i: usize, quote: char) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// Comments nest in Rust: `/* /* */ */` is one comment.
fn block_comment_end(chars: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i + 1 < chars.len() {
        match (chars[i], chars[i + 1]) {
            ('/', '*') => (depth, i) = (depth + 1, i + 2),
            ('*', '/') => {
                (depth, i) = (depth - 1, i + 2);
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    chars.len()
}

/// Whether `#`s then `"` start at `i` (after `r`, `br` or `cr`).
fn raw_string_start(chars: &[char], i: usize) -> bool {
    chars[i..].iter().find(|&&c| c != '#') == Some(&'"')
}

/// The index after a raw string whose `#`s start at `i`: it ends at `"` and as many `#`s.
fn raw_string_end(chars: &[char], i: usize) -> usize {
    let hashes = chars[i..].iter().take_while(|&&c| c == '#').count();
    let mut j = i + hashes + 1;
    while j < chars.len() {
        if chars[j] == '"'
            && chars[j + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == '#')
                .count()
                == hashes
        {
            return j + 1 + hashes;
        }
        j += 1;
    }
    chars.len()
}

/// What one file declares and names.
#[derive(Default)]
struct FileScan {
    /// The full module paths of its `mod x;` declarations.
    children: Vec<Vec<String>>,
    /// (line, absolute path) of each path into the crate.
    paths: Vec<(usize, String)>,
    /// (line, the module it is written in, segments) of each path that starts with a plain
    /// name (`recv::HeaderBlock`): a path into the crate when that name is a module declared
    /// there, which is known only at the end of the file.
    relative: Vec<(usize, Vec<String>, Vec<String>)>,
    /// The inline modules (`mod name { … }`), as full module paths.
    inline_modules: Vec<Vec<String>>,
    /// Its `macro_rules!` definitions: the name, the paths into the crate and the macros its
    /// body names.
    macros: Vec<(String, Vec<String>, Vec<String>)>,
    /// (line, name) of each macro invocation (`name!(…)`).
    invocations: Vec<(usize, String)>,
    /// Lines of what the walk cannot follow: a `#[cfg(test)]` on something other than an item,
    /// a `#[path]` attribute.
    unsupported: Vec<usize>,
}

/// Walks the tokens of the file of `module`.
fn scan_file(tokens: &[(Token, usize)], module: &[String]) -> FileScan {
    let mut found = FileScan::default();
    // Inline modules (`mod name { … }`) open at a brace depth: (name, depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    let here = |inline: &[(String, usize)]| -> Vec<String> {
        module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(name, _)| name.clone()))
            .collect()
    };
    while i < tokens.len() {
        match &tokens[i].0 {
            Token::Punct('#') if cfg_test_at(tokens, i) => {
                // An inner `#![cfg(test)]` leaves out the rest of the file.
                let inner = tokens.get(i + 1).map(|t| &t.0) == Some(&Token::Punct('!'));
                if inner {
                    i = tokens.len();
                } else if let Some(end) = item_end(tokens, attribute_end(tokens, i)) {
                    i = end;
                } else {
                    found.unsupported.push(tokens[i].1);
                    i += 1;
                }
                continue;
            }
            // `#[path = "…"] mod x;` puts a module where the walk does not look.
            Token::Punct('#')
                if tokens.get(i + 1).map(|t| &t.0) == Some(&Token::Punct('['))
                    && tokens.get(i + 2).map(|t| &t.0) == Some(&Token::Ident("path".into())) =>
            {
                found.unsupported.push(tokens[i].1);
            }
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                if inline.last().is_some_and(|(_, open)| *open == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            Token::Ident(word) if word == "macro_rules" => {
                if let Some((Token::Ident(name), _)) = tokens.get(i + 2) {
                    let end = group_end(tokens, i + 3);
                    let body = scan_file(&tokens[(i + 3).min(end)..end], &here(&inline));
                    let paths = body.paths.iter().map(|(_, path)| path.clone()).collect();
                    let invoked = body
                        .invocations
                        .iter()
                        .map(|(_, name)| name.clone())
                        .collect();
                    found.macros.push((name.clone(), paths, invoked));
                    found.paths.extend(body.paths);
                    found.invocations.extend(body.invocations);
                    i = end;
                    continue;
                }
            }
            Token::Ident(name)
                if tokens.get(i + 1).map(|t| &t.0) == Some(&Token::Punct('!'))
                    && matches!(
                        tokens.get(i + 2).map(|t| &t.0),
                        Some(Token::Punct('(' | '[' | '{'))
                    ) =>
            {
                found.invocations.push((tokens[i].1, name.clone()));
            }
            Token::Ident(word) if word == "mod" => {
                if let (Some((Token::Ident(name), _)), Some((next, _))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                {
                    match next {
                        Token::Punct(';') => found
                            .children
                            .push([here(&inline), vec![name.clone()]].concat()),
                        Token::Punct('{') => {
                            depth += 1;
                            inline.push((name.clone(), depth));
                            found.inline_modules.push(here(&inline));
                            i += 3;
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            Token::Ident(word)
                if matches!(word.as_str(), "crate" | "super" | "self")
                    && tokens.get(i + 1).map(|t| &t.0) == Some(&Token::PathSep)
                    && (i == 0 || tokens[i - 1].0 != Token::PathSep) =>
            {
                let mut paths = Vec::new();
                i = use_tree(tokens, i, Vec::new(), &mut paths);
                let base = here(&inline);
                found
                    .paths
                    .extend(paths.into_iter().filter_map(|(line, segments)| {
                        absolute(&base, &segments).map(|path| (line, path))
                    }));
                continue;
            }
            Token::Ident(_)
                if tokens.get(i + 1).map(|t| &t.0) == Some(&Token::PathSep)
                    && (i == 0 || tokens[i - 1].0 != Token::PathSep) =>
            {
                let mut paths = Vec::new();
                i = use_tree(tokens, i, Vec::new(), &mut paths);
                let base = here(&inline);
                found.relative.extend(
                    paths
                        .into_iter()
                        .map(|(line, segments)| (line, base.clone(), segments)),
                );
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    // A plain first segment is a path into the crate when it names a module declared here
    // (`mod recv;` then `recv::HeaderBlock`); anything else (`std::`, a type's `Foo::new`, an
    // alias) is not.
    let declared = |module: &[String]| {
        found.children.iter().any(|child| child == module)
            || found.inline_modules.iter().any(|inline| inline == module)
    };
    let relative = std::mem::take(&mut found.relative);
    for (line, base, segments) in relative {
        let first = [base.clone(), vec![segments[0].clone()]].concat();
        if declared(&first) {
            let mut path = base;
            path.extend(segments);
            found
                .paths
                .push((line, format!("crate::{}", path.join("::"))));
        }
    }
    found
}

/// Whether the attribute at `i` (`#[…]` or `#![…]`) is exactly `cfg(test)`.
fn cfg_test_at(tokens: &[(Token, usize)], i: usize) -> bool {
    let words: Vec<&Token> = tokens[i..].iter().map(|(token, _)| token).take(7).collect();
    let start = if words.get(1) == Some(&&Token::Punct('!')) {
        2
    } else {
        1
    };
    words.len() >= start + 6
        && words[start..start + 6]
            == [
                &Token::Punct('['),
                &Token::Ident("cfg".into()),
                &Token::Punct('('),
                &Token::Ident("test".into()),
                &Token::Punct(')'),
                &Token::Punct(']'),
            ]
}

/// The index after the attribute that starts at `i`, and after any attributes that follow it.
fn attribute_end(tokens: &[(Token, usize)], mut i: usize) -> usize {
    while tokens.get(i).map(|t| &t.0) == Some(&Token::Punct('#')) {
        while tokens
            .get(i)
            .is_some_and(|(token, _)| *token != Token::Punct('['))
        {
            i += 1;
        }
        i = group_end(tokens, i);
    }
    i
}

/// The index after the group (`(…)`, `[…]`, `{…}`) that opens at `i`.
fn group_end(tokens: &[(Token, usize)], mut i: usize) -> usize {
    let mut depth = 0;
    while i < tokens.len() {
        match tokens[i].0 {
            Token::Punct('(' | '[' | '{') => depth += 1,
            Token::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// The index after the item that starts at `i`: at its `;`, or after its body `{…}` for items
/// that have one (`fn`, `mod`, `impl`, `struct`, …). `use`, `const`, `static`, `type` and `let`
/// end at `;` only, as their value may hold braces (`const X: S = S { a: 1 };`). `None` when no
/// item starts there (an attribute on a field or a match arm): the caller reports it rather than
/// guess how much to leave out.
fn item_end(tokens: &[(Token, usize)], mut i: usize) -> Option<usize> {
    let mut keyword = i;
    if matches!(tokens.get(keyword).map(|t| &t.0), Some(Token::Ident(word)) if word == "pub") {
        keyword += 1;
        if tokens.get(keyword).map(|t| &t.0) == Some(&Token::Punct('(')) {
            keyword = group_end(tokens, keyword);
        }
    }
    let word_at = |at: usize| match tokens.get(at).map(|t| &t.0) {
        Some(Token::Ident(word)) => word.as_str(),
        _ => "",
    };
    // `const fn` (and `const unsafe fn`) has a body.
    let until_semicolon = match word_at(keyword) {
        "use" | "static" | "type" | "let" => true,
        "const" => !matches!(word_at(keyword + 1), "fn" | "unsafe" | "async" | "extern"),
        "fn" | "mod" | "impl" | "struct" | "enum" | "union" | "trait" | "unsafe" | "async"
        | "extern" | "macro_rules" => false,
        _ => return None,
    };
    let mut depth = 0;
    while i < tokens.len() {
        match tokens[i].0 {
            Token::Punct(';') if depth == 0 => return Some(i + 1),
            Token::Punct('{') if depth == 0 && !until_semicolon => {
                return Some(group_end(tokens, i))
            }
            Token::Punct('(' | '[' | '{') => depth += 1,
            Token::Punct(')' | ']' | '}') => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    Some(i)
}

/// Reads a path or use tree at `i`, appending `prefix` + its segments to `out` for each leaf
/// (`crate::a::{b, c::D}` gives `crate::a::b` and `crate::a::c::D`); returns the index after it.
/// An inline path stops where the next token is not `::` then a segment (`crate::x::f::<T>()`
/// gives `crate::x::f`).
fn use_tree(
    tokens: &[(Token, usize)],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<(usize, Vec<String>)>,
) -> usize {
    loop {
        match tokens.get(i) {
            Some((Token::Ident(segment), line)) => {
                prefix.push(segment.clone());
                let continues = tokens.get(i + 1).map(|t| &t.0) == Some(&Token::PathSep)
                    && matches!(
                        tokens.get(i + 2).map(|t| &t.0),
                        Some(Token::Ident(_) | Token::Punct('{' | '*'))
                    );
                if !continues {
                    out.push((*line, prefix));
                    return i + 1;
                }
                i += 2;
            }
            Some((Token::Punct('*'), line)) => {
                prefix.push("*".into());
                out.push((*line, prefix));
                return i + 1;
            }
            Some((Token::Punct('{'), _)) => {
                i += 1;
                while let Some((token, _)) = tokens.get(i) {
                    match token {
                        Token::Punct('}') => return i + 1,
                        Token::Punct(',') => i += 1,
                        _ => {
                            let next = use_tree(tokens, i, prefix.clone(), out);
                            i = if next == i { i + 1 } else { next };
                        }
                    }
                    // `X as Y`: the alias is not a path.
                    if matches!(tokens.get(i).map(|t| &t.0), Some(Token::Ident(word)) if word == "as")
                    {
                        i += 2;
                    }
                }
                return i;
            }
            _ => return i,
        }
    }
}

/// `segments` (as written in module `base`) as an absolute `crate::…` path, `self` segments
/// dropped; `None` for a path that does not reach into the crate root's modules (`self::x`).
fn absolute(base: &[String], segments: &[String]) -> Option<String> {
    let mut resolved: Vec<String> = Vec::new();
    let mut segments = segments.iter().peekable();
    match segments.peek().map(|segment| segment.as_str()) {
        Some("crate") => {
            segments.next();
        }
        Some("self" | "super") => resolved.extend_from_slice(base),
        _ => return None,
    }
    for segment in segments {
        match segment.as_str() {
            "self" => {}
            "super" => {
                resolved.pop();
            }
            _ => resolved.push(segment.clone()),
        }
    }
    (!resolved.is_empty()).then(|| format!("crate::{}", resolved.join("::")))
}
