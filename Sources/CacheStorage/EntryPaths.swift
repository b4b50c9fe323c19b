import CacheIO
import Glibc

/// Where an entry's files live: `resources/a/bc/<key>.data` (`.data-N`
/// after N changes of version), its metadata in an attribute of it (see
/// MetadataAttribute) or, in the older layout and where attributes are
/// refused, in `resources/a/bc/<key>.meta` beside it; in
/// 4,096 folders chosen by the key's first three hex digits (nginx's
/// `levels=1:2`): no folder grows past a few thousand names at ten million
/// entries, and an entry costs one inode (two in the older layout). The folders are made
/// when their first entry is (`makeFolder`, remembered by `LevelFolders`):
/// making all 4,112 up front took 2 s on some file systems, and as long again
/// to remove an empty cache folder.
package struct EntryPaths: Sendable {
    /// `resources/a/bc/<key>` without a suffix.
    package let base: String
    /// The store key the names are made of.
    package let key: String

    package init(resourcesRoot: String, key: String) {
        self.key = key
        // One string, grown once: every entry's first use makes two of these.
        let hex = key.utf8
        let one = hex.index(hex.startIndex, offsetBy: 1, limitedBy: hex.endIndex) ?? hex.endIndex
        let three = hex.index(one, offsetBy: 2, limitedBy: hex.endIndex) ?? hex.endIndex
        var path = resourcesRoot
        path.reserveCapacity(resourcesRoot.utf8.count + hex.count + 3 + 3)
        path += "/"
        path += key[..<one]
        path += "/"
        path += key[one..<three]
        path += "/"
        path += key
        base = path
    }

    package var meta: String { base + ".meta" }

    /// Which of the 4,096 folders the entry is in (its key's first three hex digits).
    package var folderNumber: Int { Int(String(key.utf8.prefix(3)).flatMap { Int($0, radix: 16) } ?? 0) }

    /// Makes `resources/a` and `resources/a/bc` where missing; false when
    /// they cannot be made (the resources folder itself is never made here:
    /// a deleted cache folder stays a storage fault for the store to recover).
    package func makeFolder() -> Bool {
        guard let slash = base.utf8.lastIndex(of: UInt8(ascii: "/")) else { return false }
        let folder = String(base[..<slash])
        guard let up = folder.utf8.lastIndex(of: UInt8(ascii: "/")) else { return false }
        for path in [String(folder[..<up]), folder] where mkdir(path, 0o700) != 0 && errno != EEXIST { return false }
        return true
    }

    /// The entry's metadata wherever it is kept (see `StoredMetadata`): the
    /// layout the index names is tried first, the other one when the first
    /// holds nothing (a crash between a layout change and its journal entry).
    /// A `.meta` file, when present, is the entry's metadata (an attribute
    /// beside it is a conversion's leftover, ignored). Ranges are clipped to
    /// the data file's size (never a claim beyond its end); nil when there is
    /// no valid metadata. Blocking: an open and a small read or two.
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

    /// The metadata in the attribute of the open data file of `version`
    /// (unclipped); nil when it has none, or one naming another file.
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

    /// Stored bytes (a `.meta` file's or an attribute's) decoded; in an
    /// encrypted folder they are sealed, bound to the entry's key, and bytes
    /// that do not open count as invalid.
    static func decode(_ stored: [UInt8], keys: FolderKeys?, key: String) -> ResourceMetadata? {
        guard let bytes = keys == nil ? stored : keys!.open(stored, context: key) else { return nil }
        return ResourceMetadata(decoding: bytes)
    }

    /// The data file of a version (see `dataName(version:)`).
    package func data(version: Int) -> String { base + "." + Self.dataName(version: version) }

    package func data(named name: String) -> String { base + "." + name }

    /// `data` for the first version, `data-N` for later ones: a new version
    /// gets a new file, so metadata of an old one never claims its bytes.
    package static func dataName(version: Int) -> String { version == 0 ? "data" : "data-\(version)" }

    /// The version a data file name stands for; nil for names of older releases.
    package static func version(ofDataName name: String) -> Int? {
        if name == "data" { return 0 }
        guard name.hasPrefix("data-"), let version = Int(name.dropFirst(5)), version > 0,
              version <= maxVersion else { return nil }
        return version
    }

    /// Versions are kept in 24 bits of the index record's flags.
    package static let maxVersion = 0xFF_FFFF

    /// The two levels of folders under `resources/` (those not made yet are
    /// missing: walkers skip them).
    package static var levelFolders: [String] {
        let digits = Array("0123456789abcdef")
        var folders: [String] = []
        for a in digits {
            folders.append(String(a))
            for b in digits {
                for c in digits { folders.append("\(a)/\(b)\(c)") }
            }
        }
        return folders
    }
}

/// Which entry folders are known to exist, so a new entry costs no system
/// call for its folder once one entry was made there. Shared by the shards.
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

/// An entry's metadata as stored, the data file version it names, and
/// where it was found.
package struct StoredMetadata: Sendable {
    package var metadata: ResourceMetadata
    package var version: Int
    /// Found in the data file's attribute (one file per entry), not a `.meta` file.
    package var oneFile: Bool
}
