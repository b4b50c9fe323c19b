import CacheIO
import Glibc

/// Where an entry's files live: `resources/a/bc/<key>.data` (`.data-N` after N version changes), its metadata
/// in its attribute or (older layout) `<key>.meta`. 4,096 folders by the key's first three hex digits
/// (nginx's `levels=1:2`): a few thousand names each at ten million entries; made with their first entry
/// (`LevelFolders`): all 4,112 up front took 2 s on some file systems, and as long to remove.
package struct EntryPaths: Sendable {
    package let base: String  // `resources/a/bc/<key>` without a suffix
    package let key: String

    package init(resourcesRoot: String, key: String) {
        self.key = key
        // Bytes copied, then one string made: every entry's first use makes two of these, and
        // appending the pieces to a string cost ~3,000 instructions each time.
        let hex = Array(key.utf8), slash = UInt8(ascii: "/")
        var path: [UInt8] = []
        path.reserveCapacity(resourcesRoot.utf8.count + hex.count + 6)
        path += resourcesRoot.utf8
        path.append(slash)
        path += hex.prefix(1)
        path.append(slash)
        path += hex.dropFirst().prefix(2)
        path.append(slash)
        path += hex
        base = String(decoding: path, as: UTF8.self)
    }

    package var meta: String { base + ".meta" }
    /// Which of the 4,096 folders the entry is in.
    package var folderNumber: Int { Int(String(key.utf8.prefix(3)).flatMap { Int($0, radix: 16) } ?? 0) }

    /// Makes `resources/a` and `a/bc` if missing, never `resources` (a deleted folder is a fault to recover).
    package func makeFolder() -> Bool {
        guard let slash = base.utf8.lastIndex(of: UInt8(ascii: "/")) else { return false }
        let folder = String(base[..<slash])
        guard let up = folder.utf8.lastIndex(of: UInt8(ascii: "/")) else { return false }
        for path in [String(folder[..<up]), folder] where mkdir(path, 0o700) != 0 && errno != EEXIST { return false }
        return true
    }

    /// The entry's metadata, ranges clipped to the data file: the indexed layout first, the other when
    /// it holds nothing (a crash between a layout change and its journal entry); a `.meta` file wins
    /// (an attribute beside it is a conversion's leftover). Blocking: an open and a read or two.
    package func readMetadata(keys: FolderKeys?, oneFile: Bool, version: Int) -> StoredMetadata? {
        if oneFile, let found = readAttribute(keys: keys, version: version) { return found }
        if let stored = FileIO.readAll(meta) {
            guard var metadata = Self.decode(stored, keys: keys, key: key),
                  let named = EntryPaths.version(ofDataName: metadata.dataName) else { return nil }
            metadata.ranges.clip(to: FileIO.fileSize(data(version: named)) ?? 0)
            return StoredMetadata(metadata: metadata, version: named, oneFile: false)
        }
        return oneFile ? nil : readAttribute(keys: keys, version: version)
    }

    /// The metadata in the attribute of the data file of `version`, clipped to its size.
    private func readAttribute(keys: FolderKeys?, version: Int) -> StoredMetadata? {
        let fd = open(data(version: version), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard var metadata = attributeMetadata(fd: fd, keys: keys, version: version) else { return nil }
        var info = stat()
        metadata.ranges.clip(to: fstat(fd, &info) == 0 ? Int64(info.st_size) : 0)
        return StoredMetadata(metadata: metadata, version: version, oneFile: true)
    }

    /// The attribute's metadata (unclipped); nil when none, or naming another file.
    func attributeMetadata(fd: Int32, keys: FolderKeys?, version: Int) -> ResourceMetadata? {
        guard let stored = MetadataAttribute.read(fd: fd), let metadata = Self.decode(stored, keys: keys, key: key),
              metadata.dataName == Self.dataName(version: version) else { return nil }
        return metadata
    }

    /// The metadata of a `.meta` file (unclipped) and the version it names; nil when missing or invalid.
    func readMetaFile(keys: FolderKeys?) -> (metadata: ResourceMetadata, version: Int)? {
        guard let stored = FileIO.readAll(meta), let metadata = Self.decode(stored, keys: keys, key: key),
              let version = EntryPaths.version(ofDataName: metadata.dataName) else { return nil }
        return (metadata, version)
    }

    /// Stored metadata decoded; encrypted, it is sealed to the entry's key (not opening: invalid).
    static func decode(_ stored: [UInt8], keys: FolderKeys?, key: String) -> ResourceMetadata? {
        guard let bytes = keys == nil ? stored : keys!.open(stored, context: key) else { return nil }
        return ResourceMetadata(decoding: bytes)
    }

    package func data(version: Int) -> String { base + "." + Self.dataName(version: version) }
    package func data(named name: String) -> String { base + "." + name }
    /// `data`, then `data-N`: a new version gets a new file, so old metadata never claims its bytes.
    package static func dataName(version: Int) -> String { version == 0 ? "data" : "data-\(version)" }

    /// The version a data file name stands for; nil for names of older releases.
    package static func version(ofDataName name: String) -> Int? {
        if name == "data" { return 0 }
        guard name.hasPrefix("data-"), let version = Int(name.dropFirst(5)), version > 0,
              version <= maxVersion else { return nil }
        return version
    }

    package static let maxVersion = 0xFF_FFFF  // versions are kept in 24 bits of the index record's flags

    /// The two levels of folders under `resources/` (walkers skip those not made yet).
    package static var levelFolders: [String] {
        let digits = "0123456789abcdef"
        return digits.flatMap { a in
            [String(a)] + digits.flatMap { b in digits.map { c in "\(a)/\(b)\(c)" } }
        }
    }
}

/// Entry folders known to exist: a new entry there costs no system call. Shared by the shards.
package final class LevelFolders: Sendable {
    private let made = Locked([UInt64](repeating: 0, count: 4096 / 64))

    package init() {}

    /// Makes the folder of `paths` unless known to exist; false when it cannot be made.
    package func prepare(_ paths: EntryPaths) -> Bool {
        let n = paths.folderNumber
        let bit = UInt64(1) << UInt64(n % 64)
        if made.withLock({ $0[n / 64] & bit != 0 }) { return true }
        guard paths.makeFolder() else { return false }
        made.withLock { $0[n / 64] |= bit }
        return true
    }

    /// Forgets every folder (the cache folder was deleted and is being remade).
    package func forget() { made.withLock { $0 = [UInt64](repeating: 0, count: 4096 / 64) } }
}

/// An entry's metadata as stored, the data file version it names, and where it was found.
package struct StoredMetadata: Sendable {
    package var metadata: ResourceMetadata
    package var version: Int
    package var oneFile: Bool  // found in the data file's attribute (one file per entry), not a `.meta` file
}
