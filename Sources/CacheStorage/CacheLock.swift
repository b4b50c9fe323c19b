import Glibc

/// An exclusive lock on a cache folder (flock on `CACHE/lock`) for the owning process's life, so
/// two writers never share it; the file tells other processes how to reach the owner.
package final class CacheLock: @unchecked Sendable {
    private let fd: Int32  // the descriptor is only closed in deinit; flock state is the kernel's
    package let path: String

    /// Takes the lock or throws naming the owner. The file holds the admin token: made fresh (O_EXCL, 0600);
    /// a leftover is replaced only if ours and unheld (another user's maker could read the token).
    package init(folder: String) throws(StorageError) {
        path = folder + "/lock"
        var attempts = 0
        while true {
            attempts += 1
            let fd = try Self.openFresh(path)
            if let held = FileIdentity(fd: fd), held == FileIdentity(path: path) {  // still the file at `path`
                self.fd = fd
                break
            }
            // A racing process replaced the file after we opened it: our lock guards nothing. Again.
            close(fd)
            guard attempts < 5 else { throw StorageError("cannot take the lock \(path): it keeps being replaced") }
        }
        publish(address: nil, token: nil)
    }

    /// Creates (O_EXCL) and locks the file, replacing a stale one of ours; throws for a held or foreign one.
    private static func openFresh(_ path: String) throws(StorageError) -> Int32 {
        let flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW
        var fd = open(path, flags | O_CREAT | O_EXCL, 0o600)
        if fd < 0 && errno == EEXIST {
            let old = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard old >= 0 else { throw StorageError("cannot open \(path): \(FileIO.errorText())") }
            defer { close(old) }
            var info = stat()
            guard fstat(old, &info) == 0, info.st_uid == geteuid(), (info.st_mode & S_IFMT) == S_IFREG else {
                throw StorageError("\(path) belongs to another user (uid \(info.st_uid)) or is not a file: "
                                   + "remove it if no httpcache process uses the folder", code: EPERM)
            }
            guard flock(old, LOCK_EX | LOCK_NB) == 0 else {
                let folder = String(path.dropLast("/lock".count))
                let owner = CacheLock.readOwner(folder: folder)
                // flock belongs to the open file: a second open in this process is refused too.
                if owner?.pid == getpid() {
                    throw StorageError("cache folder \(folder) is already open in this process", code: EWOULDBLOCK)
                }
                let who = owner.map { " (pid \($0.pid)\($0.address.map { ", serving \($0)" } ?? ""))" } ?? ""
                throw StorageError("cache folder \(folder) is in use by another httpcache process\(who)", code: EWOULDBLOCK)
            }
            // Stale and ours: replaced, not reused (its mode or an old descriptor could expose our writes).
            unlink(path)
            fd = open(path, flags | O_CREAT | O_EXCL, 0o600)
        }
        guard fd >= 0 else { throw StorageError("cannot create \(path): \(FileIO.errorText())") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw StorageError("cache folder is in use by another httpcache process", code: EWOULDBLOCK)
        }
        return fd
    }

    deinit { close(fd) }

    /// Lets another owner take the folder now (a closed cache may still be referenced). Idempotent.
    package func release() { flock(fd, LOCK_UN) }

    /// Writes who owns the folder: pid, and a serving proxy's address and admin token (`httpcache cache …`).
    package func publish(address: String?, token: String?) {
        var text = "pid \(getpid())\n"
        if let address { text += "address \(address)\n" }
        if let token { text += "token \(token)\n" }
        ftruncate(fd, 0)
        _ = FileIO.writeFully(fd, Array(text.utf8), at: 0)
    }

    package struct Owner: Sendable {
        package var pid: Int32
        package var address: String?
        package var token: String?
    }

    /// The owner in a folder's lock file while the lock is held (a killed process's record is ignored).
    package static func readOwner(folder: String) -> Owner? {
        let probe = open(folder + "/lock", O_RDONLY | O_CLOEXEC)
        guard probe >= 0 else { return nil }
        defer { close(probe) }
        if flock(probe, LOCK_SH | LOCK_NB) == 0 { return nil }  // nobody holds it
        guard let bytes = FileIO.readAll(folder + "/lock") else { return nil }
        var owner = Owner(pid: 0)
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else { continue }
            switch parts[0] {
            case "pid": owner.pid = Int32(parts[1]) ?? 0
            case "address": owner.address = String(parts[1])
            case "token": owner.token = String(parts[1])
            default: continue
            }
        }
        return owner.pid > 0 ? owner : nil
    }
}
