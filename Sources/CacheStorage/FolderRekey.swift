import CacheIO
import Glibc

/// `cache rekey`: re-encrypts an encrypted cache folder in place under a new user key and a new content
/// key, so the old key, even with an old copy of `encryption`, opens nothing left. Offline (lock held),
/// resumable, blocking (a command's work, never a loop's); file names stay (the name seed is kept).
///
/// First a journal, `encryption.rekey`: old and new content key sealed under the new user key; while it
/// exists the folder refuses to open and the same rekey run again finishes the work. Per entry: the data
/// is re-encrypted into its next data file version, metadata sealed under the new key names it and
/// replaces the old by a rename (one file: the new data file's attribute), then the old data goes.
/// Killed anywhere, an entry's metadata is the old naming intact old data, or the new naming complete
/// new data; the key its seal opens with tells which. Download records and the URL-signing key (signed
/// URLs keep working) are resealed by rename; the index is removed (the next start rebuilds it). Last,
/// the new `encryption` file replaces the old and the journal goes.
package enum FolderRekey {
    /// The journal of a rekey in progress, in the folder's root.
    package static let journalName = "encryption.rekey"
    static let journalMagic: [UInt8] = Array("HCREKEY1".utf8)
    static let journalContext = Array("httpcache rekey".utf8)

    package struct Summary: Sendable, Equatable {
        package var entries = 0  // entries re-encrypted (those a resumed run found done are not counted)
        package var bytes: Int64 = 0  // plaintext bytes re-encrypted
        package var records = 0  // download records resealed
        /// Files removed that no valid metadata named, or that opened under neither key.
        package var removed = 0
    }

    /// Entries switched per durability point (a file-system sync before and after their renames).
    static let batchEntries = 512
    static let batchBytes: Int64 = 256 << 20

    /// Re-encrypts the folder at `root` (lock held by the caller). Throws EKEYREJECTED, changing nothing,
    /// for a wrong old key, a folder without encryption, or an unfinished rekey to another key.
    package static func run(root: String, oldKey: [UInt8], newKey: [UInt8],
                            progress: @escaping (Summary) -> Void = { _ in }) throws(StorageError) -> Summary {
        let (old, new) = try begin(root: root, oldKey: oldKey, newKey: newKey)
        var work = Walk(root: root, old: old, new: new, progress: progress)
        try work.entries()
        try work.downloadRecords()
        try work.urlKey()
        try finish(root: root, new: new.material, newKey: newKey)
        return work.summary
    }

    // MARK: the journal

    /// The old and new keys: an interrupted run's journal's (new user key), or checked and journaled now.
    private static func begin(root: String, oldKey: [UInt8], newKey: [UInt8]) throws(StorageError) -> (FolderKeys, FolderKeys) {
        let journalPath = root + "/" + journalName
        if let journal = FileIO.readAll(journalPath) {
            guard journal.count > journalMagic.count, Array(journal.prefix(journalMagic.count)) == journalMagic,
                  let bytes = Sealing.open(Array(journal.dropFirst(journalMagic.count)),
                                           key: FolderKeys.wrappingKey(newKey), context: journalContext),
                  bytes.count == 96 else {
                throw StorageError("\(journalPath) is an interrupted rekey to another new key: run it again with "
                                   + "the new key file it was started with", code: EKEYREJECTED)
            }
            let seed = Array(bytes[0..<32])
            return (FolderKeys(.init(nameSeed: seed, contentKey: Array(bytes[32..<64]))),
                    FolderKeys(.init(nameSeed: seed, contentKey: Array(bytes[64..<96]))))
        }
        let path = root + "/" + FolderKeys.fileName
        guard let sealed = FileIO.readAll(path) else {
            throw StorageError("the cache folder \(root) is not encrypted (no \(FolderKeys.fileName) file)", code: EKEYREJECTED)
        }
        guard let material = FolderKeys.unwrapMaterial(sealed, userKey: oldKey) else {
            throw StorageError("wrong old encryption key for the cache folder (the key check in \(path) failed)",
                               code: EKEYREJECTED)
        }
        guard let contentKey = Digest.randomBytes(32),
              let journal = Sealing.seal(material.nameSeed + material.contentKey + contentKey,
                                         key: FolderKeys.wrappingKey(newKey), context: journalContext) else {
            throw StorageError("cannot make a new content key: no random bytes or cipher")
        }
        try makeTempFolder(root)
        guard FileIO.writeAtomically(journalPath, journalMagic + journal, tempFolder: root + "/tmp") else {
            throw StorageError("cannot write \(journalPath): \(FileIO.errorText())", code: errno)
        }
        FileIO.syncFolder(root)
        return (FolderKeys(material), FolderKeys(.init(nameSeed: material.nameSeed, contentKey: contentKey)))
    }

    /// The new `encryption` file, then the journal removed: the folder opens with the new key only.
    private static func finish(root: String, new: FolderKeys.Material, newKey: [UInt8]) throws(StorageError) {
        let path = root + "/" + FolderKeys.fileName
        guard let wrapped = FolderKeys.wrap(new, userKey: newKey),
              FileIO.writeAtomically(path, wrapped, tempFolder: root + "/tmp") else {
            throw StorageError("cannot write \(path): \(FileIO.errorText())", code: errno)
        }
        FileIO.syncFolder(root)
        unlink(root + "/" + journalName)
        FileIO.syncFolder(root)
    }

    private static func makeTempFolder(_ root: String) throws(StorageError) {
        guard FileIO.makeDirectory(root + "/tmp") else {
            throw StorageError("cannot create \(root)/tmp: \(FileIO.errorText())", code: errno)
        }
    }

    // MARK: the walk

    /// One pass over the folder; an entry's switch waits for its batch.
    private struct Walk {
        let root: String
        let old: FolderKeys
        let new: FolderKeys
        let progress: (Summary) -> Void
        var summary = Summary()
        /// Entries whose new data and sealed metadata are written, not yet switched.
        var pending: [Switch] = []
        var pendingBytes: Int64 = 0

        /// An entry's switch: sealed metadata renamed over `.meta`, or set as the new data file's attribute.
        struct Switch {
            var metaTemp: String? = nil
            let meta: String
            var attribute: [UInt8]? = nil
            var newData: String = ""
            let oldData: String
        }

        var resources: String { root + "/resources" }

        mutating func entries() throws(StorageError) {
            // What the old keys sealed and nobody needs: temp files, spares, the index (it names old versions).
            FileIO.removeTree(root + "/tmp")
            FileIO.removeTree(root + "/spare")
            try makeTempFolder(root)
            for name in FileIO.listDirectory(root) where name.hasPrefix("index.") || name.hasPrefix("journal.") {
                unlink(root + "/" + name)
            }
            for folder in EntryPaths.levelFolders where folder.contains("/") {
                try entries(in: resources + "/" + folder)
            }
            try switchPending()
        }

        private mutating func entries(in folder: String) throws(StorageError) {
            let names = FileIO.listDirectory(folder)
            guard !names.isEmpty else { return }
            var files: [String: [String]] = [:]  // store key → its file suffixes
            for name in names {
                guard let dot = name.firstIndex(of: ".") else { continue }
                files[String(name[..<dot]), default: []].append(String(name[name.index(after: dot)...]))
            }
            for (key, suffixes) in files where EntryKey(hex: key) != nil {
                try entry(EntryPaths(resourcesRoot: resources, key: key), suffixes: suffixes)
            }
        }

        /// One entry: done already (sealed under the new key), to re-encrypt, or unreadable (removed).
        private mutating func entry(_ paths: EntryPaths, suffixes: [String]) throws(StorageError) {
            let dataNames = suffixes.filter { EntryPaths.version(ofDataName: $0) != nil }
            guard suffixes.contains("meta") else { return try oneFileEntry(paths, dataNames: dataNames) }
            let stored = FileIO.readAll(paths.meta)
            if let stored, let metadata = Self.metadata(stored, new, paths.key) {
                // Switched before: data files it does not name are what a kill left.
                remove(dataNames.filter { $0 != metadata.dataName }, of: paths)
                return
            }
            guard let stored, var metadata = Self.metadata(stored, old, paths.key),
                  let version = EntryPaths.version(ofDataName: metadata.dataName) else {
                if stored != nil { remove(["meta"], of: paths) }
                remove(dataNames, of: paths)
                return
            }
            let oldData = try toNextVersion(&metadata, from: version, paths).oldData
            let temp = root + "/tmp/" + paths.key + ".meta"
            guard let sealed = new.seal(Array(metadata.encoded().utf8), context: paths.key),
                  Self.write(sealed, to: temp) else {
                throw StorageError("cannot write \(temp): \(FileIO.errorText())", code: errno)
            }
            try queue(Switch(metaTemp: temp, meta: paths.meta, oldData: oldData), metadata, version, dataNames, paths)
        }

        /// A one-file entry: switched if an attribute opens under the new key; else the file whose
        /// one opens under the old key is re-encrypted to the next version (attribute set at the switch).
        private mutating func oneFileEntry(_ paths: EntryPaths, dataNames: [String]) throws(StorageError) {
            var found: (metadata: ResourceMetadata, version: Int)?
            for name in dataNames {
                guard let version = EntryPaths.version(ofDataName: name),
                      let stored = MetadataAttribute.read(path: paths.data(version: version)) else { continue }
                if let metadata = Self.metadata(stored, new, paths.key), metadata.dataName == name {
                    // Switched before: data files it does not name are what a kill left.
                    remove(dataNames.filter { $0 != name }, of: paths)
                    return
                }
                if found == nil, let metadata = Self.metadata(stored, old, paths.key), metadata.dataName == name {
                    found = (metadata, version)
                }
            }
            guard case (var metadata, let version)? = found else { return remove(dataNames, of: paths) }
            let (oldData, next) = try toNextVersion(&metadata, from: version, paths)
            guard let sealed = new.seal(Array(metadata.encoded().utf8), context: paths.key) else {
                throw StorageError("cannot seal the metadata of \(paths.key)")
            }
            try queue(Switch(meta: paths.meta, attribute: sealed, newData: paths.data(version: next), oldData: oldData),
                      metadata, version, dataNames, paths)
        }

        /// A re-encrypted entry waits for its batch's switch; other data files (a kill's) go now.
        private mutating func queue(_ entry: Switch, _ metadata: ResourceMetadata, _ version: Int, _ dataNames: [String],
                                    _ paths: EntryPaths) throws(StorageError) {
            remove(dataNames.filter { $0 != metadata.dataName && $0 != EntryPaths.dataName(version: version) }, of: paths)
            pending.append(entry)
            pendingBytes += metadata.ranges.byteCount
            summary.entries += 1
            summary.bytes += metadata.ranges.byteCount
            if pending.count >= batchEntries || pendingBytes >= batchBytes { try switchPending() }
        }

        /// The cached ranges re-encrypted into the next data file, which `metadata` then names.
        private func toNextVersion(_ metadata: inout ResourceMetadata, from version: Int,
                                   _ paths: EntryPaths) throws(StorageError) -> (oldData: String, next: Int) {
            let next = version == EntryPaths.maxVersion ? 0 : version + 1
            let oldData = paths.data(version: version)
            metadata.ranges.clip(to: FileIO.fileSize(oldData) ?? 0)
            try reencrypt(from: oldData, version: version, to: paths.data(version: next), version: next,
                          key: paths.key, ranges: metadata.ranges)
            metadata.dataName = EntryPaths.dataName(version: next)
            return (oldData, next)
        }

        private static func metadata(_ sealed: [UInt8], _ keys: FolderKeys, _ key: String) -> ResourceMetadata? {
            keys.open(sealed, context: key).flatMap { ResourceMetadata(decoding: $0) }
        }

        private mutating func remove(_ suffixes: [String], of paths: EntryPaths) {
            for suffix in suffixes where unlink(paths.base + "." + suffix) == 0 { summary.removed += 1 }
        }

        /// The cached units of `from` (old cipher) written to `to` (new cipher) at the same offsets:
        /// holes stay holes, so a sparse file stays as small.
        private func reencrypt(from: String, version: Int, to: String, version next: Int, key: String,
                               ranges: RangeSet) throws(StorageError) {
            let source = open(from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            let target = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
            defer {
                if source >= 0 { close(source) }
                if target >= 0 { close(target) }
            }
            guard target >= 0 else { throw StorageError("cannot create \(to): \(FileIO.errorText())", code: errno) }
            guard source >= 0 else { return }  // no data: its metadata claims nothing (clipped to 0)
            guard let size = FileIO.fileSize(from), ftruncate(target, off_t(size)) == 0 else {
                throw StorageError("cannot size \(to): \(FileIO.errorText())", code: errno)
            }
            guard let decrypt = old.cipher(key: key, version: version), let encrypt = new.cipher(key: key, version: next) else {
                throw StorageError("cannot set up the data cipher")
            }
            let unit = Int64(UnitCipher.unitSize)
            let piece = 1 << 20
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: piece, alignment: 16)
            defer { buffer.deallocate() }
            var done: Int64 = 0  // units before it are written (ranges may share a unit)
            for range in ranges.ranges {
                var position = max(range.lowerBound / unit * unit, done)
                let end = min((range.upperBound + unit - 1) / unit * unit, (size + unit - 1) / unit * unit)
                while position < end {
                    let whole = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(min(Int64(piece), end - position))])
                    let n = DataFile.readFully(source, whole, at: position)
                    guard n > 0 else { throw StorageError("cannot read \(from): \(FileIO.errorText())", code: n < 0 ? errno : EIO) }
                    // The file's last unit may be short on disk: the cipher takes whole units, zeros past the end.
                    let units = (n + UnitCipher.unitSize - 1) / UnitCipher.unitSize * UnitCipher.unitSize
                    if units > n { (whole.baseAddress! + n).initializeMemory(as: UInt8.self, repeating: 0, count: units - n) }
                    let chunk = UnsafeMutableRawBufferPointer(rebasing: whole[0..<units])
                    guard decrypt.decrypt(chunk, firstUnit: position / unit), encrypt.encrypt(chunk, firstUnit: position / unit)
                    else { throw StorageError("the data cipher failed") }
                    try DataFile.writeFully(target, UnsafeRawBufferPointer(chunk), at: position)
                    position += Int64(units)
                }
                done = max(done, position)
            }
        }

        private static func write(_ bytes: [UInt8], to path: String) -> Bool {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { return false }
            defer { close(fd) }
            return FileIO.writeFully(fd, bytes)
        }

        /// The batch's switch: writes synced, metadata renamed, synced, then the old data goes.
        private mutating func switchPending() throws(StorageError) {
            guard !pending.isEmpty else { return }
            try sync()
            for entry in pending {
                if let temp = entry.metaTemp, rename(temp, entry.meta) != 0 {
                    throw StorageError("cannot rename \(temp) to \(entry.meta): \(FileIO.errorText())", code: errno)
                }
                if let attribute = entry.attribute {
                    let fd = open(entry.newData, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
                    let ok = fd >= 0 && MetadataAttribute.write(attribute, fd: fd)
                    let code = errno
                    if fd >= 0 { close(fd) }
                    guard ok else {
                        throw StorageError("cannot set the metadata of \(entry.newData): \(FileIO.errorText(code))", code: code)
                    }
                }
            }
            try sync()
            for entry in pending { unlink(entry.oldData) }
            pending.removeAll(keepingCapacity: true)
            pendingBytes = 0
            progress(summary)
        }

        private func sync() throws(StorageError) {
            let fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            defer { if fd >= 0 { close(fd) } }
            guard fd >= 0, FileSystemSync.sync(fd) else {
                throw StorageError("cannot sync \(root): \(FileIO.errorText())", code: errno)
            }
        }

        /// The URL-signing key, resealed (signed URLs keep working); a plain one (earlier release) too.
        mutating func urlKey() throws(StorageError) {
            _ = try reseal(URLSigningKey.path(folder: root), context: URLSigningKey.context,
                           plain: { $0.count == 32 ? $0 : nil })
        }

        /// Download records (`downloads/<id>`, they name URLs): resealed.
        mutating func downloadRecords() throws(StorageError) {
            let folder = root + "/downloads"
            for id in FileIO.listDirectory(folder) where !id.hasPrefix(".") && !id.hasSuffix(".tmp") {
                if try reseal(folder + "/" + id, context: FolderKeys.downloadContext(id)) { summary.records += 1 }
            }
            FileIO.syncFolder(folder)
        }

        /// A file sealed whole as `context`, resealed by rename (true); one under neither key is
        /// removed. `plain` recognises unsealed content.
        private mutating func reseal(_ path: String, context: String,
                                     plain: ([UInt8]) -> [UInt8]? = { _ in nil }) throws(StorageError) -> Bool {
            guard let stored = FileIO.readAll(path), new.open(stored, context: context) == nil else { return false }
            guard let content = plain(stored) ?? old.open(stored, context: context) else {
                if unlink(path) == 0 { summary.removed += 1 }
                return false
            }
            guard let sealed = new.seal(content, context: context),
                  FileIO.writeAtomically(path, sealed, tempFolder: root + "/tmp") else {
                throw StorageError("cannot write \(path): \(FileIO.errorText())", code: errno)
            }
            return true
        }
    }
}
