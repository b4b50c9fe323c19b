import CacheIO
import Glibc

/// One entry's metadata for its data file's attribute or a `.meta` file; `perform` writes a batch (pool).
struct MetadataWrite: Sendable {
    let metadata: ResourceMetadata
    let dataPath: String
    let metaPath: String
    /// The folder's keys when it is encrypted: the bytes are sealed, bound to their entry's key.
    var keys: FolderKeys? = nil
    var key: String = ""
    /// In the data file's attribute (opened by name: a waiting batch holds no descriptor; a successor
    /// that took the name is flushed again), else the `.meta` file.
    var attribute = false
    /// The data file this metadata belongs to, when known: metadata written to a new entry's file
    /// under its name would claim old ranges over new bytes (served after a crash): `superseded`.
    var identity: FileIdentity? = nil

    enum Outcome: Sendable {
        case written
        case failed(StorageError)
        /// The attribute was refused: nothing written; the entry needs a `.meta` file instead.
        case refused(MetadataAttribute.Refusal)
        case superseded  // the data file's name leads to another file now: nothing written

        var failure: StorageError? {
            if case .failed(let error) = self { return error }
            return nil
        }

        /// Not decided yet (each starts as `written` and may turn into another).
        var isPending: Bool {
            if case .written = self { return true }
            return false
        }
    }

    func fileBytes() -> [UInt8]? {
        let text = Array(metadata.encoded().utf8)
        guard let keys else { return text }
        return keys.seal(text, context: key)
    }

    /// The same write in a `.meta` file (the attribute was refused).
    var inMetaFile: MetadataWrite {
        var write = self
        write.attribute = false
        return write
    }

    /// Batches this large sync the whole file system once instead of each file.
    static let syncWholeFileSystemFrom = 8

    /// Data synced first (with delayed allocation the attribute could commit before the data blocks), then
    /// each metadata set as its data file's attribute (one atomic call) or a temp file renamed into place,
    /// then made durable; an outcome per item. On ext4 an attribute is journalled inode metadata that `fsync`
    /// commits and `fdatasync` may skip: so `fsync` (or the batch's `syncfs`) follows.
    static func perform(_ items: [MetadataWrite], root: String, tempFolder: String) -> [Outcome] {
        guard !items.isEmpty else { return [] }
        var outcomes = [Outcome](repeating: .written, count: items.count)
        func failure(_ what: String) -> StorageError {
            let code = errno
            return StorageError("\(what): \(FileIO.errorText(code))", code: code)
        }
        let wholeFileSystem = items.count >= syncWholeFileSystemFrom
        let folder = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if folder >= 0 { close(folder) } }
        // Data files opened here: one at a time in a large batch, a few in a small one.
        var descriptors = [Int32](repeating: -1, count: items.count)
        var opened = [Bool](repeating: false, count: items.count)
        func done(_ position: Int) {
            if opened[position] { close(descriptors[position]) }
            opened[position] = false
            descriptors[position] = -1
        }
        func descriptor(_ position: Int) -> Int32 {
            if descriptors[position] >= 0 { return descriptors[position] }
            let fd = open(items[position].dataPath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            descriptors[position] = fd
            opened[position] = fd >= 0
            if fd >= 0, let identity = items[position].identity, FileIdentity(fd: fd) != identity {
                outcomes[position] = .superseded
                done(position)
                return -1
            }
            return fd
        }
        defer { for position in items.indices { done(position) } }
        if wholeFileSystem {
            if folder < 0 || !FileSystemSync.sync(folder) { return Array(repeating: .failed(failure("sync")), count: items.count) }
        } else {
            for (position, item) in items.enumerated() {
                let fd = descriptor(position)
                // No data file: nothing written yet, so nothing to sync (or another entry's file).
                guard fd >= 0 else { continue }
                if fdatasync(fd) != 0 { outcomes[position] = .failed(failure("sync")) }
                if !item.attribute { done(position) }
            }
        }
        for (position, item) in items.enumerated() where item.attribute && outcomes[position].isPending {
            defer { done(position) }
            let fd = descriptor(position)
            if case .superseded = outcomes[position] { continue }
            guard fd >= 0 else {
                let code = errno
                // No data file yet (a new version nothing was written to): nothing to hold the
                // metadata and nothing for it to claim, as a `.meta` file would claim nothing.
                // A missing folder is the cache folder deleted: a storage fault.
                if code == ENOENT, let slash = item.dataPath.utf8.lastIndex(of: UInt8(ascii: "/")),
                   FileIO.isDirectory(String(item.dataPath[..<slash])) { continue }
                errno = code
                outcomes[position] = .failed(failure("open"))
                continue
            }
            guard let bytes = item.fileBytes() else {
                errno = EIO
                outcomes[position] = .failed(failure("write"))
                continue
            }
            if !MetadataAttribute.write(bytes, fd: fd) {
                let code = errno
                outcomes[position] = MetadataAttribute.refusal(code).map { .refused($0) } ?? .failed(failure("write"))
            } else if !wholeFileSystem && fsync(fd) != 0 {
                outcomes[position] = .failed(failure("sync"))
            }
        }
        var temps = [String?](repeating: nil, count: items.count)
        for (position, item) in items.enumerated() where !item.attribute && outcomes[position].isPending {
            let temp = tempFolder + "/" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
            let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else {
                outcomes[position] = .failed(failure("write"))
                continue
            }
            let bytes = item.fileBytes()
            if bytes == nil { errno = EIO }
            let ok = bytes.map { FileIO.writeFully(fd, $0) } == true && (wholeFileSystem || fsync(fd) == 0)
            if !ok { outcomes[position] = .failed(failure("write")) }
            close(fd)
            if ok { temps[position] = temp } else { unlink(temp) }
        }
        if wholeFileSystem, folder < 0 || !FileSystemSync.sync(folder) {
            let error = failure("sync")
            for (position, temp) in temps.enumerated() {
                if let temp { unlink(temp) }
                if case .written = outcomes[position] { outcomes[position] = .failed(error) }
            }
            return outcomes
        }
        for (position, temp) in temps.enumerated() {
            guard let temp else { continue }
            // Checked last, just before the rename: a `.meta` file names its data file.
            if let identity = items[position].identity, let now = FileIdentity(path: items[position].dataPath),
               now != identity {
                outcomes[position] = .superseded
                unlink(temp)
                continue
            }
            // A missing folder (the cache folder deleted) is a storage fault: the store recovers it.
            if rename(temp, items[position].metaPath) != 0 {
                outcomes[position] = .failed(failure("rename"))
                unlink(temp)
            }
        }
        return outcomes
    }

    /// `perform`, a refused attribute written again as a `.meta` file at once (`refused` hears of
    /// each first). Per item, the outcome and whether it is one file.
    static func performFallingBack(_ items: [MetadataWrite], root: String, tempFolder: String,
                                   refused: (Int, MetadataAttribute.Refusal) -> Void = { _, _ in })
        -> [(outcome: Outcome, oneFile: Bool)] {
        var results: [(outcome: Outcome, oneFile: Bool)] = perform(items, root: root, tempFolder: tempFolder)
            .enumerated().map { ($1, items[$0].attribute) }
        var retried: [Int] = []
        for (position, result) in results.enumerated() {
            guard case .refused(let refusal) = result.outcome else { continue }
            refused(position, refusal)
            results[position].oneFile = false
            retried.append(position)
        }
        guard !retried.isEmpty else { return results }
        let again = perform(retried.map { items[$0].inMetaFile }, root: root, tempFolder: tempFolder)
        for (n, position) in retried.enumerated() { results[position].outcome = again[n] }
        return results
    }
}
