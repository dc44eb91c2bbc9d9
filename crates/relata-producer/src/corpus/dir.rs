//! A directory of `.txt` and `.md` files, read one file at a time.

use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use super::error::{CorpusError, unstorable};
use super::{DEFAULT_MAX_TEXT_BYTES, Location, SourceDocument};

/// Options for [`DirReader`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirOptions {
    /// A file larger than this is an error naming it (never truncated).
    pub max_text_bytes: usize,
}

impl Default for DirOptions {
    fn default() -> Self {
        DirOptions {
            max_text_bytes: DEFAULT_MAX_TEXT_BYTES,
        }
    }
}

/// Streams the `.txt` / `.md` files under a root directory as documents.
///
/// - Recursive, depth-first, the entries of each directory sorted by name: the same tree
///   always yields the same order.
/// - Only one directory listing per level of depth and one file's content are held at a
///   time.
/// - Names starting with `.` (`.git`, editor files) are neither read nor counted.
/// - Files with another extension, and symbolic links to directories (which could form
///   cycles), are skipped and counted ([`DirReader::skipped`]). Symbolic links to files
///   under the root are read; one to a file outside it is an error naming the link.
/// - The extension match is case-insensitive (`NOTES.MD` is markdown).
/// - External id: the path relative to the root, components joined by `/` on every
///   platform. Title: for `.md`, the first level-one ATX heading (`# Title`) outside code
///   fences; otherwise (and for `.txt`) the file stem. The text is the whole file, heading
///   included, with a leading byte-order mark removed.
/// - A file that cannot be read, is not UTF-8, is empty or is over the size bound yields
///   one error naming it, and reading continues with the next file.
#[derive(Debug)]
pub struct DirReader {
    root: PathBuf,
    /// Entries still to visit; the next one is at the end.
    pending: Vec<PathBuf>,
    options: DirOptions,
    skipped: u64,
}

impl DirReader {
    /// Opens `root` with default options.
    pub fn open(root: impl AsRef<Path>) -> Result<Self, CorpusError> {
        Self::with_options(root, DirOptions::default())
    }

    /// Opens `root`. Fails if it cannot be listed or is not a directory.
    pub fn with_options(root: impl AsRef<Path>, options: DirOptions) -> Result<Self, CorpusError> {
        let root = root.as_ref().to_owned();
        let meta = fs::metadata(&root).map_err(|io| CorpusError::Open {
            path: root.clone(),
            io,
        })?;
        if !meta.is_dir() {
            return Err(CorpusError::NotADirectory { path: root });
        }
        let pending = list_sorted(&root).map_err(|io| CorpusError::Open {
            path: root.clone(),
            io,
        })?;
        Ok(DirReader {
            root,
            pending,
            options,
            skipped: 0,
        })
    }

    /// Whether the file a symbolic link resolves to lies under the corpus root.
    fn inside_root(&self, link: &Path) -> std::io::Result<bool> {
        let root = fs::canonicalize(&self.root)?;
        Ok(fs::canonicalize(link)?.starts_with(root))
    }

    /// Files skipped so far: another extension, or a symbolic link to a directory.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    fn read_file(&self, path: &Path, ext: TextKind) -> Result<SourceDocument, CorpusError> {
        let max = self.options.max_text_bytes;
        let read_err = |io| CorpusError::ReadFile {
            path: path.to_owned(),
            io,
        };
        let too_large = |bytes: u64| CorpusError::TextTooLarge {
            location: Location::File(path.to_owned()),
            bytes,
            max,
        };
        let external_id =
            relative_id(&self.root, path).ok_or_else(|| CorpusError::NonUtf8Path {
                path: path.to_owned(),
            })?;
        let file = fs::File::open(path).map_err(read_err)?;
        let len = file.metadata().map_err(read_err)?.len();
        if len > max as u64 {
            return Err(too_large(len));
        }
        // Bounded even if the file grew after the metadata call.
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        file.take(max as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(read_err)?;
        if bytes.len() > max {
            return Err(too_large(bytes.len() as u64));
        }
        let mut text = String::from_utf8(bytes).map_err(|e| CorpusError::NonUtf8File {
            path: path.to_owned(),
            valid_up_to: e.utf8_error().valid_up_to(),
        })?;
        if text.starts_with('\u{feff}') {
            text.drain(..'\u{feff}'.len_utf8());
        }
        if text.trim().is_empty() {
            return Err(CorpusError::EmptyFile {
                path: path.to_owned(),
            });
        }
        let title = match ext {
            TextKind::Markdown => markdown_title(&text),
            TextKind::Plain => None,
        }
        .or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .filter(|s| !s.trim().is_empty())
        });
        let doc = SourceDocument {
            external_id,
            title,
            text,
        };
        match unstorable(&Location::File(path.to_owned()), &doc) {
            Some(e) => Err(e),
            None => Ok(doc),
        }
    }
}

impl Iterator for DirReader {
    type Item = Result<SourceDocument, CorpusError>;

    fn next(&mut self) -> Option<Self::Item> {
        while let Some(path) = self.pending.pop() {
            let meta = match fs::symlink_metadata(&path) {
                Ok(m) => m,
                Err(io) => return Some(Err(CorpusError::ReadFile { path, io })),
            };
            let file_type = meta.file_type();
            if file_type.is_dir() {
                match list_sorted(&path) {
                    Ok(mut entries) => {
                        // `entries` is sorted descending-last: pop order is ascending.
                        self.pending.append(&mut entries);
                        continue;
                    }
                    Err(io) => return Some(Err(CorpusError::ReadDir { path, io })),
                }
            }
            let Some(kind) = text_kind(&path) else {
                self.skipped += 1;
                continue;
            };
            let is_file = if file_type.is_symlink() {
                match fs::metadata(&path) {
                    Ok(target) if target.is_file() => match self.inside_root(&path) {
                        Ok(true) => true,
                        Ok(false) => return Some(Err(CorpusError::OutsideRoot { path })),
                        Err(io) => return Some(Err(CorpusError::ReadFile { path, io })),
                    },
                    Ok(_) => false,
                    Err(io) => return Some(Err(CorpusError::ReadFile { path, io })),
                }
            } else {
                file_type.is_file()
            };
            if is_file {
                return Some(self.read_file(&path, kind));
            }
            self.skipped += 1;
        }
        None
    }
}

#[derive(Debug, Clone, Copy)]
enum TextKind {
    Plain,
    Markdown,
}

fn text_kind(path: &Path) -> Option<TextKind> {
    let ext = path.extension()?.to_str()?;
    if ext.eq_ignore_ascii_case("txt") {
        Some(TextKind::Plain)
    } else if ext.eq_ignore_ascii_case("md") {
        Some(TextKind::Markdown)
    } else {
        None
    }
}

/// The non-hidden entries of `dir`, sorted so that popping from the end visits them in
/// ascending name order.
fn list_sorted(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.as_encoded_bytes().first() == Some(&b'.') {
            continue;
        }
        entries.push(entry.path());
    }
    entries.sort_by(|a, b| b.file_name().cmp(&a.file_name()));
    Ok(entries)
}

/// `path` relative to `root`, joined with `/`; `None` if a component is not UTF-8.
fn relative_id(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let mut parts = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?),
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

/// The first level-one ATX heading (`# Title`, up to three spaces of indent, optional
/// closing `#`s) that is not inside a fenced code block.
pub(crate) fn markdown_title(text: &str) -> Option<String> {
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if indent > 3 {
            continue;
        }
        let body = &line[indent..];
        if let Some(open) = fence {
            if body.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if body.starts_with("```") {
            fence = Some("```");
            continue;
        }
        if body.starts_with("~~~") {
            fence = Some("~~~");
            continue;
        }
        let Some(rest) = body.strip_prefix('#') else {
            continue;
        };
        if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
            continue; // `##…` or `#hashtag`
        }
        let rest = rest.trim();
        // An optional closing sequence: `# Title ##`.
        let without_close = rest.trim_end_matches('#');
        let title = if without_close.is_empty() || without_close.ends_with([' ', '\t']) {
            without_close.trim_end()
        } else {
            rest
        };
        if !title.is_empty() {
            return Some(title.to_owned());
        }
    }
    None
}
