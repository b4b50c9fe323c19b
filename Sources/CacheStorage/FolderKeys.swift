import CacheIO
import Glibc

/// The keys of an encrypted cache folder.
///
/// The user's key (32 bytes) never encrypts data itself: it wraps a random
/// folder key, kept sealed (AES-256-GCM) in `FOLDER/encryption`. Opening
/// unwraps it: the GCM tag is the key check, so a wrong key is refused
/// before anything is read or removed. `cache rekey` rewraps the folder key
/// under a new user key in one atomic file replace (crash-safe: the old
/// file or the new one). Every working key is derived from the folder key
/// (HMAC-SHA256 with a label each):
///
/// - data files: AES-256-XTS over 4 KiB units, the tweak made of the unit
///   number and a file id (`fileID(key:version:)`), so every unit of every
///   file is enciphered differently; random access and partial rewrites
///   need no stored nonce and no counter can be reused;
/// - metadata, index snapshots and journal entries: AES-256-GCM, a fresh
///   random nonce per write, the entry's key (or the file's role) bound as
///   associated data;
/// - file names: store keys are HMAC-SHA256 of the cache key, so nobody
///   without the key can confirm which URL a file holds by hashing it.
///
/// Immutable and thread-safe.
package final class FolderKeys: Sendable {
    /// The name of the sealed folder key inside the cache folder.
    package static let fileName = "encryption"
    static let magic: [UInt8] = Array("HCKEY001".utf8)

    let dataKey: [UInt8]
    let sealKey: [UInt8]
    let nameKey: Digest.HMACKey
    let idKey: [UInt8]

    init(folderKey: [UInt8]) {
        func derive(_ label: String) -> [UInt8] {
            Digest.hmacSHA256(key: folderKey, message: Array(("httpcache " + label).utf8)) ?? []
        }
        dataKey = derive("data xts 1") + derive("data xts 2")
        sealKey = derive("seal")
        nameKey = Digest.HMACKey(derive("names"))
        idKey = derive("file ids")
    }

    // MARK: the user's key

    /// Reads a key file: 32 bytes, or 64 hex digits (whitespace around them ignored).
    package static func readKeyFile(_ path: String) throws(StorageError) -> [UInt8] {
        guard let bytes = FileIO.readAll(path) else {
            throw StorageError("cannot read the encryption key file \(path): \(FileIO.errorText())", code: ENOKEY)
        }
        if let key = parseKey(bytes) { return key }
        throw StorageError("\(path) holds no encryption key: 32 bytes or 64 hex digits expected", code: EINVAL)
    }

    /// A key's bytes from its file's content (32 bytes, or 64 hex digits).
    package static func parseKey(_ bytes: [UInt8]) -> [UInt8]? {
        let space: Set<UInt8> = [9, 10, 13, 32]
        let trimmed = Array(bytes.drop { space.contains($0) }.reversed().drop { space.contains($0) }.reversed())
        if trimmed.count == 64 {
            var key: [UInt8] = []
            for pair in stride(from: 0, to: 64, by: 2) {
                guard let high = hexValue(trimmed[pair]), let low = hexValue(trimmed[pair + 1]) else { break }
                key.append(high << 4 | low)
            }
            if key.count == 32 { return key }
        }
        return bytes.count == 32 ? bytes : nil
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    // MARK: the folder key

    private static func wrappingKey(_ userKey: [UInt8]) -> [UInt8] {
        Digest.hmacSHA256(key: userKey, message: Array("httpcache folder key wrap".utf8)) ?? []
    }

    private static let wrapContext = Array("httpcache folder key".utf8)

    /// Whether `root` has a sealed folder key.
    package static func isEncrypted(_ root: String) -> Bool {
        access(root + "/" + fileName, F_OK) == 0
    }

    /// The folder's keys under `userKey`: unwrapped from its file, or made
    /// (and sealed into it) when the folder is new (`isNew`). Throws
    /// ENOKEY-coded when the folder is encrypted and no key is given,
    /// EKEYREJECTED-coded for a wrong key or a key given to a folder made
    /// without one; nothing in the folder is touched then.
    package static func open(root: String, userKey: [UInt8]?, isNew: Bool) throws(StorageError) -> FolderKeys? {
        let path = root + "/" + fileName
        let sealed = FileIO.readAll(path)
        guard let userKey else {
            if sealed != nil || isEncrypted(root) {
                throw StorageError("the cache folder \(root) is encrypted: give its key (--encryption-key-file)",
                                   code: ENOKEY)
            }
            return nil
        }
        if let sealed { return try unwrap(sealed, userKey: userKey, path: path) }
        guard isNew else {
            throw StorageError("the cache folder \(root) was made without encryption: it cannot be opened with a key "
                               + "(use a new folder, or export, clear and import)", code: EKEYREJECTED)
        }
        guard let folderKey = Digest.randomBytes(32), let wrapped = wrap(folderKey, userKey: userKey) else {
            throw StorageError("cannot make a folder key: no random bytes or cipher")
        }
        // Linked into place: of two processes making the folder at once, one key wins.
        let temp = path + ".new-\(getpid())-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        guard FileIO.writeAtomically(temp, wrapped, tempFolder: root) else {
            throw StorageError("cannot write \(path): \(FileIO.errorText())", code: errno)
        }
        defer { unlink(temp) }
        if link(temp, path) != 0 && errno != EEXIST {
            throw StorageError("cannot create \(path): \(FileIO.errorText())", code: errno)
        }
        FileIO.syncFolder(root)
        guard let stored = FileIO.readAll(path) else { throw StorageError("\(path) vanished while being created") }
        return try unwrap(stored, userKey: userKey, path: path)
    }

    private static func wrap(_ folderKey: [UInt8], userKey: [UInt8]) -> [UInt8]? {
        Sealing.seal(folderKey, key: wrappingKey(userKey), context: wrapContext).map { magic + $0 }
    }

    private static func unwrap(_ sealed: [UInt8], userKey: [UInt8], path: String) throws(StorageError) -> FolderKeys {
        guard sealed.count > magic.count, Array(sealed.prefix(magic.count)) == magic else {
            throw StorageError("\(path) is not a sealed folder key (damaged?)", code: EKEYREJECTED)
        }
        guard let folderKey = Sealing.open(Array(sealed.dropFirst(magic.count)), key: wrappingKey(userKey),
                                           context: wrapContext), folderKey.count == 32 else {
            throw StorageError("wrong encryption key for the cache folder (the key check in \(path) failed)",
                               code: EKEYREJECTED)
        }
        return FolderKeys(folderKey: folderKey)
    }

    /// Rewraps the folder key of `root` from `oldKey` to `newKey`: one
    /// temp file synced and renamed over the old (a crash leaves the old key
    /// or the new one working, never neither). The data stays as it is.
    package static func rekey(root: String, oldKey: [UInt8], newKey: [UInt8]) throws(StorageError) {
        let path = root + "/" + fileName
        guard let sealed = FileIO.readAll(path) else {
            throw StorageError("the cache folder \(root) is not encrypted (no \(fileName) file)", code: EKEYREJECTED)
        }
        guard sealed.count > magic.count,
              let folderKey = Sealing.open(Array(sealed.dropFirst(magic.count)), key: wrappingKey(oldKey),
                                           context: wrapContext) else {
            throw StorageError("wrong old encryption key for the cache folder (the key check in \(path) failed)",
                               code: EKEYREJECTED)
        }
        guard let wrapped = wrap(folderKey, userKey: newKey) else { throw StorageError("cannot seal the folder key") }
        guard FileIO.writeAtomically(path, wrapped, tempFolder: FileIO.isDirectory(root + "/tmp") ? root + "/tmp" : root) else {
            throw StorageError("cannot write \(path): \(FileIO.errorText())", code: errno)
        }
        FileIO.syncFolder(root)
    }

    // MARK: working keys

    /// The store key of a cache key: keyed, so file names reveal no URL.
    package func storeKey(for cacheKey: String) -> String {
        let mac = nameKey.mac(cacheKey.utf8)
        var hex = ""
        hex.reserveCapacity(64)
        for byte in mac {
            hex.append(Self.digits[Int(byte >> 4)])
            hex.append(Self.digits[Int(byte & 15)])
        }
        return hex
    }

    private static let digits = Array("0123456789abcdef")

    /// The id in the XTS tweak of an entry's data file of `version`:
    /// different for every file, so equal bytes at equal offsets of two
    /// files differ on disk.
    func fileID(key: String, version: Int) -> UInt64 {
        let mac = Digest.hmacSHA256(key: idKey, message: Array("\(key).\(version)".utf8)) ?? []
        return mac.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The cipher of an entry's data file of `version`.
    func cipher(key: String, version: Int) -> UnitCipher? {
        UnitCipher(key: dataKey, fileID: fileID(key: key, version: version))
    }

    /// Seals a file's content; `context` names what it is (an entry's key, "index.0").
    package func seal(_ plaintext: [UInt8], context: String) -> [UInt8]? {
        Sealing.seal(plaintext, key: sealKey, context: Array(context.utf8))
    }

    package func open(_ sealed: [UInt8], context: String) -> [UInt8]? {
        Sealing.open(sealed, key: sealKey, context: Array(context.utf8))
    }

    func open(_ sealed: UnsafeRawBufferPointer, context: String) -> [UInt8]? {
        Sealing.open(sealed, key: sealKey, context: Array(context.utf8))
    }
}
