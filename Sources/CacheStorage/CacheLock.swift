import Glibc

/// An exclusive lock on a cache folder (flock on `CACHE/lock`), held for the
/// life of the process that owns the folder, so two writers never share it.
/// The file also tells other processes how to reach the owner.
package final class CacheLock: @unchecked Sendable {
    // The descriptor is only closed in deinit; flock state is the kernel's.
    private let fd: Int32
    package let path: String

    /// Takes the lock or throws a clear error naming the owner.
    package init(folder: String) throws(StorageError) {
        path = folder + "/lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StorageError("cannot open \(path): \(FileIO.errorText())") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let owner = CacheLock.readOwner(folder: folder)
            close(fd)
            // flock belongs to the open file, not the process: a second open in
            // this process is refused as well, which is what callers rely on.
            if owner?.pid == getpid() {
                throw StorageError("cache folder \(folder) is already open in this process", code: EWOULDBLOCK)
            }
            let who = owner.map { " (pid \($0.pid)\($0.address.map { ", serving \($0)" } ?? ""))" } ?? ""
            throw StorageError("cache folder \(folder) is in use by another httpcache process\(who)", code: EWOULDBLOCK)
        }
        self.fd = fd
        publish(address: nil, token: nil)
    }

    deinit { close(fd) }

    /// Lets another owner take the folder now, before this object goes away
    /// (a closed cache may still be referenced). Safe to call more than once.
    package func release() {
        flock(fd, LOCK_UN)
    }

    /// Writes who owns the folder: pid, and for a serving proxy its address
    /// and the admin token that `httpcache cache …` uses to talk to it.
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

    /// The owner recorded in a folder's lock file, if the lock is held now
    /// (a record left by a killed process is ignored).
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
