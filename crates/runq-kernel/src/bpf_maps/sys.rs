//! The raw `bpf(2)` calls the map dumper makes: open a map or a BTF
//! object by id, read their info, walk a map's keys and look up values.
//! The tests also load BTF and create and fill maps of their own.
//!
//! Each command has its own `#[repr(C)]` slice of `union bpf_attr`; the
//! kernel zero-fills the part of the union past the size passed.

use std::ffi::c_void;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use super::MapInfo;

const BPF_MAP_LOOKUP_ELEM: u32 = 1;
const BPF_MAP_GET_NEXT_KEY: u32 = 4;
const BPF_MAP_GET_FD_BY_ID: u32 = 14;
const BPF_OBJ_GET_INFO_BY_FD: u32 = 15;
const BPF_BTF_GET_FD_BY_ID: u32 = 19;
#[cfg(test)]
const BPF_MAP_CREATE: u32 = 0;
#[cfg(test)]
const BPF_MAP_UPDATE_ELEM: u32 = 2;
#[cfg(test)]
const BPF_BTF_LOAD: u32 = 18;

/// `BPF_F_RDONLY`: the dumper only reads, so it opens maps read-only.
const BPF_F_RDONLY: u32 = 1 << 3;

/// The attributes of the element commands (lookup, update, next key).
#[repr(C)]
#[derive(Default)]
struct ElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// The attributes of the `*_GET_FD_BY_ID` commands.
#[repr(C)]
#[derive(Default)]
struct ByIdAttr {
    id: u32,
    _next_id: u32,
    open_flags: u32,
}

/// The attributes of `BPF_OBJ_GET_INFO_BY_FD`.
#[repr(C)]
#[derive(Default)]
struct InfoAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

/// `struct bpf_map_info` as of kernel 6.x.
#[repr(C)]
#[derive(Default)]
struct RawMapInfo {
    map_type: u32,
    id: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    _map_flags: u32,
    name: [u8; 16],
    _ifindex: u32,
    _btf_vmlinux_value_type_id: u32,
    _netns_dev: u64,
    _netns_ino: u64,
    btf_id: u32,
    btf_key_type_id: u32,
    btf_value_type_id: u32,
    _btf_vmlinux_id: u32,
    _map_extra: u64,
}

/// `struct bpf_btf_info`.
#[repr(C)]
#[derive(Default)]
struct RawBtfInfo {
    btf: u64,
    btf_size: u32,
    _id: u32,
    _name: u64,
    _name_len: u32,
    _kernel_btf: u32,
}

/// Calls `bpf(cmd, attr, sizeof(A))`; the non-negative result, or errno.
///
/// # Safety
///
/// `A` must be the kernel's attribute layout for `cmd`, and every address
/// in `attr` must be valid, for the whole call, for the reads and writes
/// `cmd` makes through it (of the sizes `attr` or the map's info give).
unsafe fn bpf<A>(cmd: u32, attr: &mut A) -> io::Result<libc::c_long> {
    let size = std::mem::size_of::<A>() as libc::c_uint;
    let ptr = (attr as *mut A).cast::<c_void>();
    // SAFETY: `attr` is a live, exclusive borrow of `size` bytes; what the
    // kernel does through the addresses inside it is the caller's contract.
    let ret = unsafe { libc::syscall(libc::SYS_bpf, cmd as libc::c_long, ptr, size) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Wraps a file descriptor a successful `bpf(2)` call returned.
fn owned(fd: libc::c_long) -> io::Result<OwnedFd> {
    let raw = i32::try_from(fd).map_err(|_| io::Error::other("bpf(2) returned no fd"))?;
    // SAFETY: the kernel just created `raw` for this process and nothing
    // else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Opens a descriptor of the object `id` with a `*_GET_FD_BY_ID` command.
fn fd_by_id(cmd: u32, id: u32, open_flags: u32) -> io::Result<OwnedFd> {
    let mut attr = ByIdAttr {
        id,
        open_flags,
        ..ByIdAttr::default()
    };
    // SAFETY: `ByIdAttr` is the layout of the by-id commands; it holds no
    // address.
    owned(unsafe { bpf(cmd, &mut attr) }?)
}

/// Opens BPF map `id`, read-only.
pub(super) fn map_fd_by_id(id: u32) -> io::Result<OwnedFd> {
    fd_by_id(BPF_MAP_GET_FD_BY_ID, id, BPF_F_RDONLY)
}

/// Opens BTF object `id`.
pub(super) fn btf_fd_by_id(id: u32) -> io::Result<OwnedFd> {
    fd_by_id(BPF_BTF_GET_FD_BY_ID, id, 0)
}

/// Fills `info` (a kernel info struct) for the object behind `fd`.
///
/// # Safety
///
/// `T` must be the info layout of the kind of object `fd` is, and any
/// address inside `info` valid for the writes the kernel makes there.
unsafe fn obj_info<T>(fd: BorrowedFd<'_>, info: &mut T) -> io::Result<()> {
    let mut attr = InfoAttr {
        bpf_fd: fd.as_raw_fd() as u32,
        info_len: std::mem::size_of::<T>() as u32,
        info: info as *mut T as u64,
    };
    // SAFETY: the kernel writes at most `info_len` bytes at `info`, a live
    // exclusive borrow; the rest is the caller's contract.
    unsafe { bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr) }.map(drop)
}

/// The info of the map behind `fd`.
pub(super) fn map_info(fd: BorrowedFd<'_>) -> io::Result<MapInfo> {
    let mut raw = RawMapInfo::default();
    // SAFETY: `fd` is a map (callers open it as one); `RawMapInfo` holds
    // no address.
    unsafe { obj_info(fd, &mut raw) }?;
    let len = raw
        .name
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(raw.name.len());
    Ok(MapInfo {
        id: raw.id,
        name: String::from_utf8_lossy(&raw.name[..len]).into_owned(),
        map_type: raw.map_type,
        key_size: raw.key_size,
        value_size: raw.value_size,
        max_entries: raw.max_entries,
        btf_id: raw.btf_id,
        btf_key_type_id: raw.btf_key_type_id,
        btf_value_type_id: raw.btf_value_type_id,
    })
}

/// The raw BTF blob (header, types, strings) of the BTF object behind `fd`.
pub(super) fn btf_data(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    let mut info = RawBtfInfo::default();
    // SAFETY: `fd` is a BTF object; with `btf` 0 and `btf_size` 0 the
    // kernel only reports the blob's size.
    unsafe { obj_info(fd, &mut info) }?;
    let mut blob = vec![0u8; info.btf_size as usize];
    let mut info = RawBtfInfo {
        btf: blob.as_mut_ptr() as u64,
        btf_size: blob.len() as u32,
        ..RawBtfInfo::default()
    };
    // SAFETY: the kernel copies at most `btf_size` bytes to `btf`, which
    // is `blob`, alive and that long.
    unsafe { obj_info(fd, &mut info) }?;
    blob.truncate(info.btf_size as usize);
    Ok(blob)
}

/// Writes into `next` the key after `key` (the first key when `None`);
/// `Ok(false)` when there is none.
///
/// # Safety
///
/// `next`, and `key` when given, must each be at least the map's key size
/// (as its info reports it) long.
pub(super) unsafe fn next_key(
    fd: BorrowedFd<'_>,
    key: Option<&[u8]>,
    next: &mut [u8],
) -> io::Result<bool> {
    let mut attr = ElemAttr {
        map_fd: fd.as_raw_fd() as u32,
        key: key.map_or(0, |k| k.as_ptr() as u64),
        value: next.as_mut_ptr() as u64,
        ..ElemAttr::default()
    };
    // SAFETY: the kernel reads key_size bytes at `key` and writes key_size
    // bytes at `next`; both are that long (the caller's contract).
    match unsafe { bpf(BPF_MAP_GET_NEXT_KEY, &mut attr) } {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Copies the value of `key` into `value`; `Ok(false)` when the key is
/// gone.
///
/// # Safety
///
/// `key` must be at least the map's key size long and `value` at least
/// the size of one lookup's copy (the value size, or the per-CPU buffer's
/// size for a per-CPU map).
pub(super) unsafe fn lookup(fd: BorrowedFd<'_>, key: &[u8], value: &mut [u8]) -> io::Result<bool> {
    let mut attr = ElemAttr {
        map_fd: fd.as_raw_fd() as u32,
        key: key.as_ptr() as u64,
        value: value.as_mut_ptr() as u64,
        ..ElemAttr::default()
    };
    // SAFETY: the kernel reads the key and writes one value copy; both
    // buffers are long enough (the caller's contract).
    match unsafe { bpf(BPF_MAP_LOOKUP_ELEM, &mut attr) } {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Loads a BTF blob; errors carry the kernel's verifier log.
#[cfg(test)]
pub(super) fn btf_load(blob: &[u8]) -> io::Result<OwnedFd> {
    #[repr(C)]
    struct BtfLoadAttr {
        btf: u64,
        log_buf: u64,
        btf_size: u32,
        log_size: u32,
        log_level: u32,
    }
    let mut log = vec![0u8; 1 << 16];
    let mut attr = BtfLoadAttr {
        btf: blob.as_ptr() as u64,
        log_buf: log.as_mut_ptr() as u64,
        btf_size: blob.len() as u32,
        log_size: log.len() as u32,
        log_level: 1,
    };
    // SAFETY: the kernel reads `btf_size` bytes of `blob` and writes at
    // most `log_size` bytes into `log`; both outlive the call.
    match unsafe { bpf(BPF_BTF_LOAD, &mut attr) } {
        Ok(fd) => owned(fd),
        Err(e) => {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            Err(io::Error::new(e.kind(), format!("BTF_LOAD: {e}: {text}")))
        }
    }
}

/// What the tests' maps are created with.
#[cfg(test)]
#[derive(Default)]
pub(super) struct MapSpec<'a> {
    pub map_type: u32,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub name: &'static str,
    pub btf: Option<(BorrowedFd<'a>, u32, u32)>,
}

/// Creates a map.
#[cfg(test)]
pub(super) fn map_create(spec: &MapSpec<'_>) -> io::Result<OwnedFd> {
    #[repr(C)]
    #[derive(Default)]
    struct CreateAttr {
        map_type: u32,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
        map_flags: u32,
        inner_map_fd: u32,
        numa_node: u32,
        name: [u8; 16],
        ifindex: u32,
        btf_fd: u32,
        btf_key_type_id: u32,
        btf_value_type_id: u32,
    }
    let mut attr = CreateAttr {
        map_type: spec.map_type,
        key_size: spec.key_size,
        value_size: spec.value_size,
        max_entries: spec.max_entries,
        ..CreateAttr::default()
    };
    let n = spec.name.len().min(15);
    attr.name[..n].copy_from_slice(&spec.name.as_bytes()[..n]);
    if let Some((fd, key, value)) = spec.btf {
        (attr.btf_fd, attr.btf_key_type_id, attr.btf_value_type_id) =
            (fd.as_raw_fd() as u32, key, value);
    }
    // SAFETY: `CreateAttr` is MAP_CREATE's layout; it holds no address.
    owned(unsafe { bpf(BPF_MAP_CREATE, &mut attr) }?)
}

/// Sets `key` to `value`.
///
/// # Safety
///
/// `key` must be at least the map's key size long and `value` one full
/// value copy (the per-CPU buffer's size for a per-CPU map).
#[cfg(test)]
pub(super) unsafe fn update(fd: BorrowedFd<'_>, key: &[u8], value: &[u8]) -> io::Result<()> {
    let mut attr = ElemAttr {
        map_fd: fd.as_raw_fd() as u32,
        key: key.as_ptr() as u64,
        value: value.as_ptr() as u64,
        ..ElemAttr::default()
    };
    // SAFETY: the kernel only reads the key and one value copy, which
    // the buffers hold (the caller's contract).
    unsafe { bpf(BPF_MAP_UPDATE_ELEM, &mut attr) }.map(drop)
}
