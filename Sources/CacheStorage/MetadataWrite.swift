import CacheIO
import Glibc

/// One entry's metadata to write, naming the data file whose bytes it
/// claims. `perform` writes a batch: blocking, for the pool.
struct MetadataWrite: Sendable {
    let metadata: ResourceMetadata
    let dataPath: String
    let metaPath: String
    /// The folder's keys when it is encrypted: the file is sealed, bound to its entry's key.
    var keys: FolderKeys? = nil
    var key: String = ""

    /// The file's bytes: the text, sealed in an encrypted folder.
    func fileBytes() -> [UInt8]? {
        let text = Array(metadata.encoded().utf8)
        guard let keys else { return text }
        return keys.seal(text, context: key)
    }

    /// Batches this large sync the whole file system once instead of each
    /// file: a few syncs for a burst of small entries.
    static let syncWholeFileSystemFrom = 8

    /// Data first, then the metadata that claims it: the data files synced,
    /// each metadata written to a temp file, the temp files synced, then
    /// renamed into place (atomic). Returns, per item, nil when written or
    /// why not (errno read on the thread that failed).
    static func perform(_ items: [MetadataWrite], root: String, tempFolder: String) -> [StorageError?] {
        guard !items.isEmpty else { return [] }
        var failures = [StorageError?](repeating: nil, count: items.count)
        func failure(_ what: String) -> StorageError {
            let code = errno
            return StorageError("\(what): \(FileIO.errorText(code))", code: code)
        }
        let wholeFileSystem = items.count >= syncWholeFileSystemFrom
        let folder = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if folder >= 0 { close(folder) } }
        if wholeFileSystem {
            if folder < 0 || !FileSystemSync.sync(folder) { return Array(repeating: failure("sync"), count: items.count) }
        } else {
            for (position, item) in items.enumerated() {
                let fd = open(item.dataPath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
                // No data file: nothing written yet, so nothing to sync.
                guard fd >= 0 else { continue }
                if fdatasync(fd) != 0 { failures[position] = failure("sync") }
                close(fd)
            }
        }
        var temps = [String?](repeating: nil, count: items.count)
        for (position, item) in items.enumerated() where failures[position] == nil {
            let temp = tempFolder + "/" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
            let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else {
                failures[position] = failure("write")
                continue
            }
            let bytes = item.fileBytes()
            if bytes == nil { errno = EIO }
            let ok = bytes.map { FileIO.writeFully(fd, $0) } == true && (wholeFileSystem || fsync(fd) == 0)
            if !ok { failures[position] = failure("write") }
            close(fd)
            if ok { temps[position] = temp } else { unlink(temp) }
        }
        if wholeFileSystem, folder < 0 || !FileSystemSync.sync(folder) {
            let error = failure("sync")
            for (position, temp) in temps.enumerated() {
                if let temp { unlink(temp) }
                if failures[position] == nil { failures[position] = error }
            }
            return failures
        }
        for (position, temp) in temps.enumerated() {
            guard let temp else { continue }
            // A missing folder (the cache folder deleted) is a storage fault: the store recovers it.
            if rename(temp, items[position].metaPath) != 0 {
                failures[position] = failure("rename")
                unlink(temp)
            }
        }
        return failures
    }
}
