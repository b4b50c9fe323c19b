/// Where an entry's two files live: `resources/a/bc/<key>.meta` and
/// `resources/a/bc/<key>.data` (`.data-N` after N changes of version), in
/// 4,096 folders chosen by the key's first three hex digits (nginx's
/// `levels=1:2`): no folder grows past a few thousand names at ten million
/// entries, and an entry costs two inodes, not three.
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

    /// The entry's metadata and the version of the data file it names,
    /// its ranges clipped to that file's size (never a claim beyond the
    /// file's end); nil when there is no valid metadata of this layout.
    /// Blocking: one small read and a stat. In an encrypted folder the file
    /// is sealed (`keys`); one that does not open counts as invalid.
    package func readMetadata(keys: FolderKeys?) -> (metadata: ResourceMetadata, version: Int)? {
        guard let stored = FileIO.readAll(meta),
              let bytes = keys == nil ? stored : keys!.open(stored, context: key),
              var metadata = ResourceMetadata(decoding: String(decoding: bytes, as: UTF8.self)),
              let version = EntryPaths.version(ofDataName: metadata.dataName) else { return nil }
        metadata.ranges.clip(to: FileIO.fileSize(data(version: version)) ?? 0)
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

    /// The two levels of folders under `resources/`, all made when the folder is first laid out.
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
