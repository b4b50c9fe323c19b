import Foundation

/// The files of a cache folder's entries as the layout puts them
/// (`resources/a/bc/<key>.meta` and `<key>.data…`), for tests that look at the disk.
enum CacheFolderFiles {
    /// Every file under `resources/` (relative paths), folders left out.
    static func all(_ cacheDirectory: String) -> [String] {
        let root = cacheDirectory + "/resources"
        let paths = (try? FileManager.default.subpathsOfDirectory(atPath: root)) ?? []
        return paths.filter { !isDirectory(root + "/" + $0) }.sorted().map { root + "/" + $0 }
    }

    /// Every entry's metadata file.
    static func metaPaths(_ cacheDirectory: String) -> [String] { all(cacheDirectory).filter { $0.hasSuffix(".meta") } }

    /// Every entry's data file.
    static func dataPaths(_ cacheDirectory: String) -> [String] {
        all(cacheDirectory).filter { !$0.hasSuffix(".meta") }
    }

    private static func isDirectory(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
    }
}
