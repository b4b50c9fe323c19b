import Foundation
import Glibc
@testable import CacheStorage

/// What tests of the store look at on disk, in either layout.
enum CacheFolderSupport {
    /// A copy of a cache folder as it stands (a crash's leftovers, opened by
    /// a new store): `cp -a`, which keeps the data files' attributes (the
    /// entries' metadata) where Foundation's copy drops them.
    static func copy(_ folder: String, to copy: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/cp")
        process.arguments = ["-a", folder, copy]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    /// Every file under `resources/` (relative paths).
    static func files(in root: String) -> [String] {
        let all = FileManager.default.enumerator(atPath: root + "/resources")?.compactMap { $0 as? String } ?? []
        return all.filter { path in
            var isFolder: ObjCBool = false
            return FileManager.default.fileExists(atPath: root + "/resources/" + path, isDirectory: &isFolder) && !isFolder.boolValue
        }
    }

    /// Entries whose metadata is on disk: `.meta` files, and data files holding it in their attribute.
    static func entriesWithMetadata(in root: String) -> Int {
        files(in: root).filter { path in
            path.hasSuffix(".meta") || MetadataAttribute.read(path: root + "/resources/" + path) != nil
        }.count
    }

    /// Removes an entry's metadata wherever its layout keeps it; true when there was some.
    static func removeMetadata(_ paths: EntryPaths, version: Int = 0) -> Bool {
        unlink(paths.meta) == 0 || MetadataAttribute.remove(path: paths.data(version: version))
    }
}
