import Glibc

/// The sparse data file of one resource: bytes live at their real offsets.
///
/// The descriptor is immutable and closed on deinit; responses keep the
/// object alive while sendfile ranges of it are queued. Reads and writes
/// use positional I/O, so sharing across threads (fdatasync on the pool) is safe.
package final class DataFile: @unchecked Sendable {
    package let fd: Int32

    package init(path: String) throws(StorageError) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw StorageError("open \(path): \(FileIO.errorText())") }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Writes all of `bytes` at `offset`.
    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StorageError) {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                throw StorageError("write: \(FileIO.errorText(code))", code: code)
            }
            done += n
        }
    }

    /// Makes written bytes durable (blocking: pool thread only).
    package func sync() -> Bool { fdatasync(fd) == 0 }
}

package struct StorageError: Error, CustomStringConvertible, Sendable {
    package let description: String
    /// The errno behind it, when a system call failed.
    package let code: Int32?
    package init(_ description: String, code: Int32? = nil) {
        self.description = description
        self.code = code
    }

    /// The file system is full (or the quota spent).
    package var isNoSpace: Bool { code == ENOSPC || code == EDQUOT }

    /// The cache folder cannot take writes: full, deleted, made read-only or
    /// failing. The proxy then passes bytes through instead of failing.
    package var isStorageFault: Bool {
        guard let code else { return false }
        return [ENOSPC, EDQUOT, ENOENT, ENOTDIR, EACCES, EPERM, EROFS, EIO].contains(code)
    }
}
