//! Field projection: decoding only some fields of transposed records (spec §10).

use std::collections::HashMap;

use crate::error::CodecError;

/// The largest protobuf field number, 2^29 − 1.
const MAX_FIELD_NUMBER: u32 = (1 << 29) - 1;

/// Which fields of proto records a transposed chunk decoder keeps (spec §10).
///
/// A field is named by its path of field numbers from the root message. A
/// path may end in [`EXISTENCE_ONLY`](Self::EXISTENCE_ONLY) (0): the field is
/// kept but its value is replaced by its type's default (zero, empty string,
/// empty message). Fields outside every path are dropped, and buckets that hold
/// only dropped fields are never decompressed. Non-proto records are always
/// kept whole.
///
/// ```
/// use riegeli_codec::FieldProjection;
///
/// // Field 1, and field 3 of the submessage in field 2.
/// let projection = FieldProjection::from_paths([&[1][..], &[2, 3]])?;
/// assert!(!projection.includes_all());
/// assert!(FieldProjection::all().includes_all());
/// # Ok::<(), riegeli_codec::CodecError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProjection {
    /// `None` means every field.
    paths: Option<Vec<Vec<u32>>>,
}

impl Default for FieldProjection {
    /// Every field: [`FieldProjection::all`].
    fn default() -> Self {
        Self::all()
    }
}

impl FieldProjection {
    /// The path element that keeps a field's existence but not its value.
    pub const EXISTENCE_ONLY: u32 = 0;

    /// Every field: records are decoded whole.
    pub fn all() -> Self {
        Self { paths: None }
    }

    /// No field yet: proto records decode as empty messages until fields are
    /// added with [`add_field`](Self::add_field).
    pub fn none() -> Self {
        Self { paths: Some(Vec::new()) }
    }

    /// The fields named by `paths` (see [`add_field`](Self::add_field)).
    pub fn from_paths<I, P>(paths: I) -> Result<Self, CodecError>
    where
        I: IntoIterator<Item = P>,
        P: AsRef<[u32]>,
    {
        let mut projection = Self::none();
        for path in paths {
            projection.add_field(path.as_ref())?;
        }
        Ok(projection)
    }

    /// Adds the field at `path`, a sequence of field numbers from the root
    /// message, optionally ending in [`EXISTENCE_ONLY`](Self::EXISTENCE_ONLY).
    ///
    /// An empty path means the whole record, which turns projection off. A
    /// path of only `[0]` adds nothing. Errors on a field number above
    /// 2^29 − 1 or a 0 before the last element.
    pub fn add_field(&mut self, path: &[u32]) -> Result<&mut Self, CodecError> {
        for (i, &number) in path.iter().enumerate() {
            if number > MAX_FIELD_NUMBER {
                return Err(CodecError::invalid("field projection path", i as u64, "field number out of range"));
            }
            if number == Self::EXISTENCE_ONLY && i + 1 != path.len() {
                return Err(CodecError::invalid(
                    "field projection path",
                    i as u64,
                    "existence-only marker before the end of the path",
                ));
            }
        }
        if path.is_empty() {
            self.paths = None;
        } else if let Some(paths) = &mut self.paths {
            paths.push(path.to_vec());
        }
        Ok(self)
    }

    /// Whether every field is included, so that projection is off.
    pub fn includes_all(&self) -> bool {
        self.paths.is_none()
    }

    /// The included paths, or `None` for every field.
    pub fn paths(&self) -> Option<&[Vec<u32>]> {
        self.paths.as_deref()
    }
}

/// How a node of the include tree is included. The order matters: when two
/// paths reach one element, the smaller (more inclusive) kind wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum IncludeType {
    /// The last element of a wanted path: everything below is kept.
    Fully,
    /// An element on the way to a wanted field.
    Child,
    /// The last element of a path ending in 0.
    ExistenceOnly,
}

/// The id of the root of the include tree.
pub(crate) const ROOT_ID: u32 = u32::MAX;

/// The included paths as a tree: `(parent id, field number) -> (id, type)`.
#[derive(Debug, Default)]
pub(crate) struct IncludeTree {
    map: HashMap<(u32, u32), (u32, IncludeType)>,
}

impl IncludeTree {
    /// Builds the tree of `paths` (already validated by [`FieldProjection`]).
    pub(crate) fn build(paths: &[Vec<u32>]) -> Self {
        let mut map: HashMap<(u32, u32), (u32, IncludeType)> = HashMap::new();
        for path in paths {
            let (path, existence_only) = match path.split_last() {
                Some((&FieldProjection::EXISTENCE_ONLY, rest)) => (rest, true),
                _ => (&path[..], false),
            };
            let mut current = ROOT_ID;
            for (i, &number) in path.iter().enumerate() {
                let include_type = if i + 1 < path.len() {
                    IncludeType::Child
                } else if existence_only {
                    IncludeType::ExistenceOnly
                } else {
                    IncludeType::Fully
                };
                let next_id = u32::try_from(map.len()).unwrap_or(ROOT_ID - 1);
                let entry = map.entry((current, number)).or_insert((next_id, include_type));
                entry.1 = entry.1.min(include_type);
                current = entry.0;
            }
        }
        Self { map }
    }

    /// The child `field` of the element `parent`.
    pub(crate) fn get(&self, parent: u32, field: u32) -> Option<(u32, IncludeType)> {
        self.map.get(&(parent, field)).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_paths() {
        assert!(FieldProjection::from_paths([&[1, 0, 2][..]]).is_err());
        assert!(FieldProjection::from_paths([&[1 << 29][..]]).is_err());
        assert!(FieldProjection::from_paths([&[(1 << 29) - 1, 0][..]]).is_ok());
        let mut p = FieldProjection::none();
        assert!(!p.includes_all());
        p.add_field(&[]).unwrap();
        assert!(p.includes_all());
    }

    #[test]
    fn tree_prefers_the_most_inclusive_kind() {
        let tree = IncludeTree::build(&[vec![1, 2], vec![1], vec![3, 0], vec![3, 4], vec![0]]);
        let (one, kind) = tree.get(ROOT_ID, 1).unwrap();
        assert_eq!(kind, IncludeType::Fully);
        assert_eq!(tree.get(one, 2).unwrap().1, IncludeType::Fully);
        // [3, 0] makes 3 existence-only, [3, 4] makes it a child: child wins.
        let (three, kind) = tree.get(ROOT_ID, 3).unwrap();
        assert_eq!(kind, IncludeType::Child);
        assert_eq!(tree.get(three, 4).unwrap().1, IncludeType::Fully);
        assert!(tree.get(ROOT_ID, 0).is_none());
        assert!(tree.get(ROOT_ID, 2).is_none());
    }
}
