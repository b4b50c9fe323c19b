import CacheStorage
import Foundation

/// The files of a cache folder's entries as the layout puts them
/// (`resources/a/bc/<key>.data…`, the metadata in the data file's attribute;
/// in the older layout a `<key>.meta` file beside it), for tests that look
/// at the disk.
enum CacheFolderFiles {
    /// Every file under `resources/` (relative paths), folders left out.
    static func all(_ cacheDirectory: String) -> [String] {
        let root = cacheDirectory + "/resources"
        let paths = (try? FileManager.default.subpathsOfDirectory(atPath: root)) ?? []
        return paths.filter { !isDirectory(root + "/" + $0) }.sorted().map { root + "/" + $0 }
    }

    /// Every file holding an entry's metadata: its `.meta` file, or its data
    /// file when the metadata is in the file's attribute (one per entry either way).
    static func metaPaths(_ cacheDirectory: String) -> [String] {
        let files = all(cacheDirectory)
        let twoFiles = Set(files.filter { $0.hasSuffix(".meta") }.map { $0.dropLast(5) })
        return files.filter { path in
            if path.hasSuffix(".meta") { return true }
            guard let dot = path.lastIndex(of: "."), !twoFiles.contains(path[..<dot]) else { return false }
            return MetadataAttribute.read(path: path) != nil
        }
    }

    /// The metadata bytes a path of `metaPaths` holds (the text in a folder without encryption).
    static func metadata(_ path: String) -> Data? {
        if path.hasSuffix(".meta") { return try? Data(contentsOf: URL(fileURLWithPath: path)) }
        return MetadataAttribute.read(path: path).map { Data($0) }
    }

    /// The same as text.
    static func metadataText(_ path: String) -> String? {
        metadata(path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Every entry's data file.
    static func dataPaths(_ cacheDirectory: String) -> [String] {
        all(cacheDirectory).filter { !$0.hasSuffix(".meta") }
    }

    private static func isDirectory(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
    }
}
