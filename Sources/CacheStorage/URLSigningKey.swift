import CacheIO
import Glibc

/// The folder's URL-signing key: 32 random bytes in `FOLDER/url-key` (0600), made on first use; a
/// file others could read (or own) is refused (its reader mints URLs). Encrypted (`keys`), it is
/// sealed like the metadata (an earlier plain key is sealed in place: its URLs keep working).
package enum URLSigningKey {
    package static func path(folder: String) -> String { folder + "/url-key" }

    static let context = "httpcache url key"  // what the key is sealed as in an encrypted folder

    package static func loadOrCreate(folder: String, keys: FolderKeys? = nil) throws(StorageError) -> [UInt8] {
        let path = path(folder: folder)
        if let stored = try load(path) {
            guard let keys else {
                guard stored.count == 32 else { throw StorageError("\(path) is not a 32-byte key; remove it to make a new one") }
                return stored
            }
            if stored.count == 32 {
                guard let sealed = keys.seal(stored, context: context),
                      FileIO.writeAtomically(path, sealed, tempFolder: folder) else {
                    throw StorageError("cannot seal \(path): \(FileIO.errorText())", code: errno)
                }
                return stored
            }
            guard let key = keys.open(stored, context: context), key.count == 32 else {
                throw StorageError("\(path) does not open with the folder's key; remove it to make a new one "
                                   + "(proxy URLs signed with the old one stop working)", code: EKEYREJECTED)
            }
            return key
        }
        guard FileIO.makeDirectories(folder) else {
            throw StorageError("cannot create cache folder \(folder): \(FileIO.errorText())", code: errno)
        }
        guard let key = Digest.randomBytes(32), let content = keys.map({ $0.seal(key, context: context) }) ?? key else {
            throw StorageError("no random bytes or cipher for a new URL key")
        }
        guard FileIO.createOnce(path, content, tempFolder: folder) else {
            throw StorageError("cannot create \(path): \(FileIO.errorText())", code: errno)
        }
        return try loadOrCreate(folder: folder, keys: keys)
    }

    /// The key at `path`, nil when there is no file.
    private static func load(_ path: String) throws(StorageError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw StorageError("cannot open \(path): \(FileIO.errorText())", code: errno)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
            throw StorageError("\(path) must belong to this user with mode 0600; remove it to make a new key "
                               + "(proxy URLs signed with the old one stop working)", code: EPERM)
        }
        // A plain key is 32 bytes, a sealed one 60; anything else is not a key file.
        var bytes = [UInt8](repeating: 0, count: 128)
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n == 32 || n == 32 + Sealing.overhead else {
            throw StorageError("\(path) is not a URL key; remove it to make a new one")
        }
        return Array(bytes.prefix(n))
    }
}
