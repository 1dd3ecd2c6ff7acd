//! A naive model of the file layout: walks positions block by block, in
//! `u128` so that it can tell overflow from a real answer.

pub(crate) const BS: u128 = 65536;
pub(crate) const HDR: u128 = 24;

fn fits(x: u128) -> Option<u64> {
    u64::try_from(x).ok()
}

pub(crate) fn remaining_in_block(pos: u64) -> u64 {
    let pos = u128::from(pos);
    let mut end = pos;
    while end % BS != 0 {
        end += 1;
    }
    (end - pos) as u64
}

pub(crate) fn is_possible_chunk_boundary(pos: u64) -> bool {
    let in_block = u128::from(pos) % BS;
    in_block == 0 || in_block > HDR
}

/// Lays out `size` chunk bytes from `pos`, skipping a block header at each boundary crossed.
pub(crate) fn add_with_overhead(pos: u64, size: u64) -> Option<u64> {
    let mut pos = u128::from(pos);
    let mut size = u128::from(size);
    while size > 0 {
        if pos % BS == 0 {
            pos += HDR;
        }
        let take = (BS - pos % BS).min(size);
        pos += take;
        size -= take;
    }
    fits(pos)
}

pub(crate) fn round_up_to_possible_chunk_boundary(pos: u64) -> Option<u64> {
    let mut p = u128::from(pos);
    while !(p % BS == 0 || p % BS > HDR) {
        p += 1;
    }
    fits(p)
}

pub(crate) fn chunk_end(begin: u64, data_size: u64, num_records: u64) -> Option<u64> {
    let content = add_with_overhead(begin, 40u64.checked_add(data_size)?)?;
    let records = round_up_to_possible_chunk_boundary(begin.checked_add(num_records)?)?;
    Some(content.max(records))
}

/// Counts the bytes of `[begin, end)` that are not inside a block header.
pub(crate) fn distance_without_overhead(begin: u64, end: u64) -> Option<u64> {
    if end < begin {
        return None;
    }
    let (mut p, end) = (u128::from(begin), u128::from(end));
    let mut count = 0u128;
    while p < end {
        let in_block = p % BS;
        let block_end = (p - in_block + BS).min(end);
        if in_block < HDR {
            let header_end = (p - in_block + HDR).min(end);
            p = header_end;
        } else {
            count += block_end - p;
            p = block_end;
        }
    }
    fits(count)
}
