import CacheIO
import Glibc

/// Where an entry's two files live: `resources/a/bc/<key>.meta` and
/// `resources/a/bc/<key>.data` (`.data-N` after N changes of version), in
/// 4,096 folders chosen by the key's first three hex digits (nginx's
/// `levels=1:2`): no folder grows past a few thousand names at ten million
/// entries, and an entry costs two inodes, not three. The folders are made
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
        let utf8 = Array(key.utf8.prefix(3))
        let first = String(decoding: utf8.prefix(1), as: UTF8.self)
        let second = String(decoding: utf8.dropFirst(), as: UTF8.self)
        base = resourcesRoot + "/" + first + "/" + second + "/" + key
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

    /// The entry's metadata and the version of the data file it names,
    /// its ranges clipped to that file's size (never a claim beyond the
    /// file's end); nil when there is no valid metadata of this layout.
    /// Blocking: one small read and a stat. In an encrypted folder the file
    /// is sealed (`keys`); one that does not open counts as invalid.
    package func readMetadata(keys: FolderKeys?) -> (metadata: ResourceMetadata, version: Int)? {
        readMetadata(keys: keys) { FileIO.fileSize(data(version: $0)) }
    }

    /// The same, the data file's size told by `dataSize` (given its version):
    /// a caller that opens the file anyway asks its descriptor, not the path.
    package func readMetadata(keys: FolderKeys?,
                              dataSize: (Int) -> Int64?) -> (metadata: ResourceMetadata, version: Int)? {
        guard let stored = FileIO.readAll(meta),
              let bytes = keys == nil ? stored : keys!.open(stored, context: key),
              var metadata = ResourceMetadata(decoding: String(decoding: bytes, as: UTF8.self)),
              let version = EntryPaths.version(ofDataName: metadata.dataName) else { return nil }
        metadata.ranges.clip(to: dataSize(version) ?? 0)
        return (metadata, version)
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
