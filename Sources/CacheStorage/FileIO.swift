import Glibc

/// Small blocking file helpers (POSIX, no Foundation). Callers keep the
/// slow ones (fsync, tree removal) off the loop thread.
package enum FileIO {
    package static func readAll(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; return nil }
            if n == 0 { return result }
            result.append(contentsOf: chunk[0..<n])
        }
    }

    /// Writes `bytes` to `path` so that a crash leaves either the old or the new
    /// file whole: temp file (in `tempFolder`, on the same file system), fsync, rename.
    package static func writeAtomically(_ path: String, _ bytes: [UInt8], tempFolder: String) -> Bool {
        // A unique temp name: two writers never share a temp file.
        let temp = tempFolder + "/" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        var ok = writeFully(fd, bytes) && fsync(fd) == 0
        var code = errno
        close(fd)
        if ok && rename(temp, path) != 0 {
            ok = false
            code = errno
        }
        guard ok else {
            unlink(temp)
            errno = code  // the caller reports the failure, not the clean-up
            return false
        }
        return true
    }

    package static func writeFully(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 { if errno == EINTR { continue }; return false }
                offset += n
            }
            return true
        }
    }

    /// pwrite of all bytes at an offset.
    package static func writeFully(_ fd: Int32, _ bytes: [UInt8], at offset: Int64) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let n = pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
                if n < 0 { if errno == EINTR { continue }; return false }
                done += n
            }
            return true
        }
    }

    /// Copies a file (for import/export across file systems).
    /// `mode` is 0600 for copies into the cache (private), wider for exports.
    package static func copyFile(from source: String, to destination: String, mode: mode_t = 0o600) -> Bool {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { return false }
        defer { close(input) }
        let output = open(destination, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard output >= 0 else { return false }
        defer { close(output) }
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; return false }
            if n == 0 { return fsync(output) == 0 }
            guard writeFully(output, Array(chunk[0..<n])) else { return false }
        }
    }

    /// Cache folders are private (0700): metadata holds URLs with their tokens.
    /// The umask can only narrow it.
    package static func makeDirectory(_ path: String) -> Bool {
        mkdir(path, 0o700) == 0 || errno == EEXIST
    }

    /// Narrows an existing folder of ours (made by an older version, or by
    /// hand) to `mode` when it allows more; bits it lacks stay off (a tighter
    /// umask is kept), and a foreign one is left alone.
    package static func restrict(_ path: String, to mode: mode_t) {
        var info = stat()
        guard stat(path, &info) == 0, info.st_uid == geteuid() else { return }
        let current = info.st_mode & 0o777
        if current & ~mode != 0 { chmod(path, current & mode) }
    }

    /// Narrows an open file of ours as `restrict(_:to:)`.
    package static func restrict(fd: Int32, to mode: mode_t) {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_uid == geteuid() else { return }
        let current = info.st_mode & 0o777
        if current & ~mode != 0 { fchmod(fd, current & mode) }
    }

    /// Creates `path` and any missing parents.
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
        defer { closedir(dir) }
        var names: [String] = []
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while let entry = readdir(dir) {
            // Read the name in place: a dirent record can be shorter than
            // the struct, so copying the d_name field would read past it.
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

    /// Removes a file or a directory tree.
    package static func removeTree(_ path: String) {
        if isDirectory(path) {
            for name in listDirectory(path) { removeTree(path + "/" + name) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }

    package static func errorText(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }
}
