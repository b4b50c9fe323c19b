import CacheIO
import Glibc

/// Small blocking file helpers (POSIX, no Foundation); callers keep the slow ones off the loop.
package enum FileIO {
    /// No symlink followed (it reads cache files); at most `limit` bytes (an endless file fills no memory).
    package static func readAll(_ path: String, limit: Int = .max) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return readAll(fd: fd, limit: limit)
    }

    /// The bytes of `fd` from where it stands to its end, at most `limit`; nil on a read error.
    package static func readAll(fd: Int32, limit: Int = .max) -> [UInt8]? {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while result.count < limit {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, min($0.count, limit - result.count)) }
            if n < 0 { if errno == EINTR { continue }; return nil }
            if n == 0 { return result }
            result.append(contentsOf: chunk[0..<n])
        }
        return result
    }

    /// Writes `path` so a crash leaves the old or new file whole: temp file in `tempFolder`, fsync, rename.
    package static func writeAtomically(_ path: String, _ bytes: [UInt8], tempFolder: String) -> Bool {
        // A unique temp name: two writers never share a temp file.
        let temp = tempFolder + "/" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return false }
        let written = writeFully(fd, bytes) && fsync(fd) == 0
        let code = errno
        close(fd)
        if written && rename(temp, path) == 0 { return true }
        let failure = written ? errno : code
        unlink(temp)
        errno = failure  // the caller reports the failure, not the clean-up
        return false
    }

    /// Creates `path` whole unless it exists (the existing file wins): written aside, synced and linked
    /// into place, so no reader sees half a file and of two creators one wins. False with errno set.
    package static func createOnce(_ path: String, _ bytes: [UInt8], tempFolder: String) -> Bool {
        let temp = path + ".new-\(getpid())-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        guard writeAtomically(temp, bytes, tempFolder: tempFolder) else { return false }
        defer { unlink(temp) }
        return link(temp, path) == 0 || errno == EEXIST
    }

    /// Makes a folder's entries (renames, links) durable; false when it cannot.
    @discardableResult
    package static func syncFolder(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return fsync(fd) == 0
    }

    package static func writeFully(_ fd: Int32, _ bytes: [UInt8], at offset: Int64? = nil) -> Bool {
        bytes.withUnsafeBytes { writeAll(fd, $0, at: offset) == nil }
    }

    /// Writes all of `bytes` at `offset` (where the file stands when nil); the errno when it fails.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64? = nil) -> Int32? {
        var done = 0
        while done < bytes.count {
            let start = bytes.baseAddress! + done
            let n = if let offset { pwrite(fd, start, bytes.count - done, off_t(offset) + off_t(done)) }
                else { write(fd, start, bytes.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += n
        }
        return nil
    }

    /// Opens `path` for reading if a regular file, not a symlink (a device never ends, a FIFO blocks,
    /// a symlink shares another file's later content); O_NONBLOCK until known regular.
    package static func openRegularFile(_ path: String) -> Result<(fd: Int32, size: Int64), StorageError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            let code = errno
            let why = code == ELOOP ? "is a symbolic link" : errorText(code)
            return .failure(StorageError("cannot read \(path): \(why)", code: code == ELOOP ? EINVAL : code))
        }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            return .failure(StorageError("\(path) is not a regular file", code: EINVAL))
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return .success((fd, Int64(info.st_size)))
    }

    /// Copies exactly `size` bytes from `input` to a new file at `destination` (replacing one, never
    /// through a symlink, never a hard link), mode 0600, synced; `decrypting`/`encrypting` a data file.
    package static func copy(_ input: Int32, size: Int64, to destination: String,
                             from decrypting: UnitCipher? = nil, to encrypting: UnitCipher? = nil) -> Bool {
        unlink(destination)
        let output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard output >= 0 else { return false }
        defer { close(output) }
        let unit = UnitCipher.unitSize
        func roundUp(_ n: Int) -> Int { (n + unit - 1) / unit * unit }
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var done: Int64 = 0
        while done < size {
            let want = Int(min(Int64(chunk.count), size - done))
            let wanted = decrypting == nil ? want : roundUp(want)
            let firstUnit = done / Int64(unit)
            let ok = chunk.withUnsafeMutableBytes { raw -> Bool in
                let got = DataFile.readFully(input, UnsafeMutableRawBufferPointer(rebasing: raw[0..<wanted]), at: done)
                guard got >= want else {  // a read error, or the file shrank while it was copied
                    if got >= 0 { errno = EIO }
                    return false
                }
                if let decrypting {
                    raw.baseAddress!.advanced(by: got).initializeMemory(as: UInt8.self, repeating: 0, count: wanted - got)
                    guard decrypting.decrypt(UnsafeMutableRawBufferPointer(rebasing: raw[0..<wanted]), firstUnit: firstUnit)
                    else { return false }
                }
                var count = want
                if let encrypting {
                    count = roundUp(want)
                    raw.baseAddress!.advanced(by: want).initializeMemory(as: UInt8.self, repeating: 0, count: count - want)
                    guard encrypting.encrypt(UnsafeMutableRawBufferPointer(rebasing: raw[0..<count]), firstUnit: firstUnit)
                    else { return false }
                }
                return writeAll(output, UnsafeRawBufferPointer(rebasing: raw[0..<count])) == nil
            }
            guard ok else {
                if errno == 0 { errno = EIO }
                return false
            }
            done += Int64(want)
        }
        return fsync(output) == 0
    }

    /// Cache folders are private (0700; the umask can only narrow it): metadata holds URLs with tokens.
    package static func makeDirectory(_ path: String) -> Bool { mkdir(path, 0o700) == 0 || errno == EEXIST }

    /// Narrows a folder of ours to `mode` if it allows more (a tighter umask is kept; others' left alone).
    package static func restrict(_ path: String, to mode: mode_t) {
        var info = stat()
        if stat(path, &info) == 0, let narrower = narrowed(info, to: mode) { chmod(path, narrower) }
    }

    package static func restrict(fd: Int32, to mode: mode_t) {
        var info = stat()
        if fstat(fd, &info) == 0, let narrower = narrowed(info, to: mode) { fchmod(fd, narrower) }
    }

    private static func narrowed(_ info: stat, to mode: mode_t) -> mode_t? {
        let current = info.st_mode & 0o777
        return info.st_uid == geteuid() && current & ~mode != 0 ? current & mode : nil
    }

    package static func makeDirectories(_ path: String) -> Bool {
        var current = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            current += "/" + part
            if !makeDirectory(current) { return false }
        }
        return true
    }

    package static func listDirectory(_ path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        return names(closing: dir)
    }

    /// The names in an open directory stream but `.` and `..`; closes it.
    private static func names(closing dir: OpaquePointer) -> [String] {
        defer { closedir(dir) }
        var names: [String] = []
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while let entry = readdir(dir) {
            // In place: a dirent record can be shorter than the struct (copying d_name reads past it).
            let name = String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    package static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    package static func fileSize(_ path: String) -> Int64? {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : nil
    }

    /// Removes a file or directory tree, never following a symlink: walked with descriptors
    /// (openat O_NOFOLLOW, unlinkat), so a link swapped in below `path` never leads outside it.
    package static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            unlink(path)
            return
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return }
        removeContents(of: fd, depth: 0)
        close(fd)
        rmdir(path)
    }

    /// Cache trees are two or three levels deep: deeper ones are not ours to walk.
    private static let maxRemovalDepth = 32

    private static func removeContents(of fd: Int32, depth: Int) {
        guard depth < maxRemovalDepth else { return }
        let listing = dup(fd)
        guard listing >= 0, let dir = fdopendir(listing) else { return }
        for name in names(closing: dir) {
            var info = stat()
            guard fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                let child = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard child >= 0 else { continue }
                removeContents(of: child, depth: depth + 1)
                close(child)
                unlinkat(fd, name, AT_REMOVEDIR)
            } else {
                unlinkat(fd, name, 0)
            }
        }
    }

    /// Why the cache folder cannot be trusted, or nil: it must be the user's own, writable by nobody
    /// else (who could swap in poisoned entries or symlinks), with real folders of its own inside.
    package static func untrustedFolderProblem(_ root: String, inside: [String]) -> String? {
        var info = stat()
        guard stat(root, &info) == 0 else { return "cannot read cache folder \(root): \(errorText())" }
        let user = geteuid()
        if info.st_uid != user {
            return "cache folder \(root) belongs to user \(info.st_uid), not to this user (\(user)): refusing it"
        }
        if info.st_mode & 0o022 != 0 {
            return "cache folder \(root) is writable by group or others (mode \(String(info.st_mode & 0o777, radix: 8))): "
                + "refusing it (chmod 700 it)"
        }
        for name in inside {
            var entry = stat()
            guard lstat(root + "/" + name, &entry) == 0 else { continue }
            if entry.st_mode & S_IFMT != S_IFDIR || entry.st_uid != user {
                return "\(root)/\(name) is not a folder of this user's (a symlink?): refusing the cache folder"
            }
        }
        return nil
    }

    package static func errorText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }
}
