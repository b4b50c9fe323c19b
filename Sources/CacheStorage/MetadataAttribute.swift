import CacheIO
import Glibc
import Synchronization

/// An entry's metadata in its data file's attribute `user.httpcache.meta`: one file, one inode, one open at
/// first use; the body stays at offset 0. Refused user attributes (ENOTSUP) or a value too big (ext4: about 4
/// KB; E2BIG, ENOSPC, ERANGE) leave a `.meta` file. Blocking: pool threads, rare loop reads.
package enum MetadataAttribute {
    package static let name = "user.httpcache.meta"

    /// Why a write was refused, telling the layout to fall back to a `.meta` file.
    package enum Refusal: Sendable, Equatable {
        case unsupported  // the file system takes no user attributes: the whole folder keeps two files
        case tooBig  // this value does not fit: this entry keeps two files
    }

    /// Tests only: an errno every write fails with (0: none), as a refusing file system would.
    package static let failWritesWith = Atomic<Int32>(0)

    /// What a failed write's errno means for the layout; nil for other failures.
    static func refusal(_ code: Int32) -> Refusal? {
        switch code {
        case ENOTSUP, EOPNOTSUPP: return .unsupported
        case E2BIG, ENOSPC, ERANGE: return .tooBig
        default: return nil
        }
    }

    /// Replaces the whole value atomically (never a mix); durable once fsynced. False with errno set.
    static func write(_ bytes: [UInt8], fd: Int32) -> Bool {
        let injected = failWritesWith.load(ordering: .relaxed)
        if injected != 0 {
            errno = injected
            return false
        }
        return bytes.withUnsafeBytes { FileAttribute.set(fd, name: name, $0) }
    }

    /// The value, nil when absent (ENODATA), unreadable or unsupported.
    static func read(fd: Int32) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var n = buffer.withUnsafeMutableBytes { FileAttribute.get(fd, name: name, into: $0) }
        if n < 0 && errno == ERANGE {
            // Larger than a block (file systems that take up to 64 KiB): ask its size.
            let size = FileAttribute.get(fd, name: name, into: UnsafeMutableRawBufferPointer(start: nil, count: 0))
            guard size > 0, size <= 1 << 16 else { return nil }
            buffer = [UInt8](repeating: 0, count: size)
            n = buffer.withUnsafeMutableBytes { FileAttribute.get(fd, name: name, into: $0) }
        }
        guard n >= 0 else { return nil }
        return Array(buffer[0..<n])
    }

    /// The value of the file at `path` (never through a symlink), nil when either is missing.
    package static func read(path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return read(fd: fd)
    }

    /// Removes the value (tests make a metadata-less entry with it).
    @discardableResult
    package static func remove(path: String) -> Bool { FileAttribute.remove(path: path, name: name) }
}
