import Glibc

/// Reads a small file the process is told to trust (a key, a configuration): a regular file of this
/// user's (or root's), no symlink, writable by no one else, for a secret readable by no one else (as
/// ssh requires). O_NOFOLLOW, O_NONBLOCK and fstat refuse a FIFO, a device or a swapped-in symlink
/// before any read; the read stops past `maxBytes`. One function for the CLI, Swift and C APIs.
package enum TrustedFile {
    /// The file's bytes, else a `StorageError` coded `code` (`openCode` when it cannot be opened)
    /// saying how to fix it. `followsLinks`: a symlink is followed (its target checked), not refused.
    package static func read(_ path: String, what: String, maxBytes: Int, secret: Bool, code: Int32,
                             openCode: Int32? = nil, followsLinks: Bool = false) throws(StorageError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (followsLinks ? 0 : O_NOFOLLOW))
        guard fd >= 0 else {
            let error = errno
            switch error {
            case ENOENT: throw StorageError("\(what) \(path): no such file", code: openCode ?? code)
            case ELOOP where !followsLinks:
                throw StorageError("\(what) \(path) is a symbolic link: refusing it (name the file itself)", code: code)
            default: throw StorageError("cannot read \(what) \(path): \(FileIO.errorText(error))", code: openCode ?? code)
            }
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw StorageError("cannot read \(what) \(path): \(FileIO.errorText())", code: code)
        }
        if let problem = problem(info, what: what, path: path, secret: secret) { throw StorageError(problem, code: code) }
        guard Int(info.st_size) <= maxBytes else {
            throw StorageError("\(what) \(path) is \(info.st_size) bytes, more than \(what) can be (\(maxBytes))", code: code)
        }
        // One byte past the bound tells a file that grew after the fstat.
        guard let bytes = FileIO.readAll(fd: fd, limit: maxBytes + 1) else {
            throw StorageError("cannot read \(what) \(path): \(FileIO.errorText())", code: code)
        }
        guard bytes.count <= maxBytes else {
            throw StorageError("\(what) \(path) is more than \(maxBytes) bytes, more than \(what) can be", code: code)
        }
        return bytes
    }

    package static func problem(_ info: stat, what: String, path: String, secret: Bool) -> String? {
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG else {
            return "\(what) \(path) is not a regular file (\(typeName(type))): refusing it"
        }
        let user = geteuid()
        if info.st_uid != user && info.st_uid != 0 {
            return "\(what) \(path) belongs to user \(info.st_uid), not to this user (\(user)): refusing it"
        }
        let mode = "mode " + octal(info.st_mode & 0o7777)
        let readable = info.st_mode & 0o044 != 0
        let writable = info.st_mode & 0o022 != 0
        if secret && (readable || writable) {
            let how = readable && writable ? "readable and writable" : readable ? "readable" : "writable"
            return "\(what) \(path) is \(how) by group or others (\(mode)): chmod 600 \(path)"
        }
        if writable {
            return "\(what) \(path) is writable by group or others (\(mode)): chmod go-w \(path)"
        }
        return nil
    }

    /// Why the folder holding `path` is untrusted (another user could replace the file), or nil.
    package static func folderProblem(of path: String, what: String) -> String? {
        let folder = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        let name = folder.isEmpty ? "/" : folder
        var info = stat()
        guard stat(name, &info) == 0 else { return "cannot read the folder of \(what) \(path): \(FileIO.errorText())" }
        let user = geteuid()
        if info.st_uid != user && info.st_uid != 0 {
            return "the folder \(name) of \(what) \(path) belongs to user \(info.st_uid), not to this user (\(user)): refusing it"
        }
        if info.st_mode & 0o022 != 0 {
            return "the folder \(name) of \(what) \(path) is writable by group or others (mode \(octal(info.st_mode & 0o7777))): "
                + "anyone could replace the file; move it, or chmod go-w \(name)"
        }
        return nil
    }

    private static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private static func typeName(_ type: mode_t) -> String {
        switch type {
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFDIR: "a folder"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symbolic link"
        default: "not a plain file"
        }
    }
}
