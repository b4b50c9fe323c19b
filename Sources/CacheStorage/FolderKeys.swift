import CacheIO
import Glibc

/// The keys of an encrypted cache folder.
///
/// The user's key (32 bytes) only wraps a random folder key, sealed (AES-256-GCM) in `FOLDER/encryption`;
/// the GCM tag is the key check, so a wrong key is refused before anything is read or removed. The folder
/// key is two secrets: the name seed (file names) and the content key (everything else, HMAC-SHA256 with a
/// label each). A new folder uses one random key for both; `cache rekey` replaces the content key and keeps
/// the name seed (a file name's cache key is not stored, so names cannot be recomputed):
///
/// - data files: AES-256-XTS over 4 KiB units, tweaked with unit number and file id
///   (`fileID(key:version:)`): every unit enciphered differently, random access and rewrites
///   without stored nonce or counter reuse;
/// - metadata, index snapshots, journal entries: AES-256-GCM, a fresh random nonce per write, the
///   entry's key (or the file's role) as associated data;
/// - file names: HMAC-SHA256 of the cache key, so nobody without the key can confirm a URL by hashing.
///
/// Immutable and thread-safe.
package final class FolderKeys: Sendable {
    package static let fileName = "encryption"
    static let magic: [UInt8] = Array("HCKEY001".utf8)
    let dataKey: [UInt8]
    let sealKey: [UInt8]
    let nameKey: Digest.HMACKey
    let idKey: [UInt8]
    let material: Material  // the secrets these keys come from (what the `encryption` file seals)

    /// The two secrets of a folder key (32 bytes each).
    struct Material: Equatable {
        var nameSeed: [UInt8]
        var contentKey: [UInt8]

        /// A folder's first key: one secret for both.
        init(folderKey: [UInt8]) { (nameSeed, contentKey) = (folderKey, folderKey) }
        init(nameSeed: [UInt8], contentKey: [UInt8]) { (self.nameSeed, self.contentKey) = (nameSeed, contentKey) }

        /// 32 bytes when both are one key (as a new folder writes it), else 64.
        var bytes: [UInt8] { nameSeed == contentKey ? contentKey : nameSeed + contentKey }

        init?(bytes: [UInt8]) {
            switch bytes.count {
            case 32: self.init(folderKey: bytes)
            case 64: self.init(nameSeed: Array(bytes[0..<32]), contentKey: Array(bytes[32...]))
            default: return nil
            }
        }
    }

    convenience init(folderKey: [UInt8]) { self.init(Material(folderKey: folderKey)) }

    init(_ material: Material) {
        func derive(_ key: [UInt8], _ label: String) -> [UInt8] {
            Digest.hmacSHA256(key: key, message: Array(("httpcache " + label).utf8)) ?? []
        }
        self.material = material
        dataKey = derive(material.contentKey, "data xts 1") + derive(material.contentKey, "data xts 2")
        sealKey = derive(material.contentKey, "seal")
        nameKey = Digest.HMACKey(derive(material.nameSeed, "names"))
        idKey = derive(material.contentKey, "file ids")
    }

    // MARK: the user's key

    /// Reads a key file (32 bytes, or 64 hex digits and whitespace) no one else may read or write
    /// (`TrustedFile`); every refusal is ENOKEY (`HTTPCacheError.Code.key`, exit 22) and says why.
    package static func readKeyFile(_ path: String) throws(StorageError) -> [UInt8] {
        let bytes = try TrustedFile.read(path, what: "key file", maxBytes: keyFileMaxBytes, secret: true, code: ENOKEY)
        if let key = parseKey(bytes) { return key }
        throw StorageError("key file \(path) holds no encryption key (\(bytes.count) bytes): 32 bytes or 64 hex digits expected",
                           code: ENOKEY)
    }

    static let keyFileMaxBytes = 128  // 64 hex digits and the whitespace around them, at most

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

    static func wrappingKey(_ userKey: [UInt8]) -> [UInt8] {
        Digest.hmacSHA256(key: userKey, message: Array("httpcache folder key wrap".utf8)) ?? []
    }

    private static let wrapContext = Array("httpcache folder key".utf8)

    package static func isEncrypted(_ root: String) -> Bool { access(root + "/" + fileName, F_OK) == 0 }

    /// The folder's keys under `userKey`, made when the folder `isNew`. Throws, touching nothing,
    /// ENOKEY for an encrypted folder without key, EKEYREJECTED for a wrong or unwanted key.
    package static func open(root: String, userKey: [UInt8]?, isNew: Bool) throws(StorageError) -> FolderKeys? {
        let path = root + "/" + fileName
        if access(root + "/" + FolderRekey.journalName, F_OK) == 0 {
            throw StorageError("the cache folder \(root) is in the middle of an interrupted `cache rekey`: run it again "
                               + "with the same key files to finish it", code: EKEYREJECTED)
        }
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
        guard let folderKey = Digest.randomBytes(32),
              let wrapped = wrap(Material(folderKey: folderKey), userKey: userKey) else {
            throw StorageError("cannot make a folder key: no random bytes or cipher")
        }
        // Of two processes making the folder at once, one key wins.
        guard FileIO.createOnce(path, wrapped, tempFolder: root) else {
            throw StorageError("cannot create \(path): \(FileIO.errorText())", code: errno)
        }
        FileIO.syncFolder(root)
        guard let stored = FileIO.readAll(path) else { throw StorageError("\(path) vanished while being created") }
        return try unwrap(stored, userKey: userKey, path: path)
    }

    /// The content of an `encryption` file: `material` sealed under the user's key.
    static func wrap(_ material: Material, userKey: [UInt8]) -> [UInt8]? {
        Sealing.seal(material.bytes, key: wrappingKey(userKey), context: wrapContext).map { magic + $0 }
    }

    /// The material an `encryption` file seals under `userKey`; nil for a wrong key or a damaged file.
    static func unwrapMaterial(_ sealed: [UInt8], userKey: [UInt8]) -> Material? {
        guard sealed.count > magic.count, Array(sealed.prefix(magic.count)) == magic,
              let bytes = Sealing.open(Array(sealed.dropFirst(magic.count)), key: wrappingKey(userKey), context: wrapContext)
        else { return nil }
        return Material(bytes: bytes)
    }

    private static func unwrap(_ sealed: [UInt8], userKey: [UInt8], path: String) throws(StorageError) -> FolderKeys {
        guard sealed.count > magic.count, Array(sealed.prefix(magic.count)) == magic else {
            throw StorageError("\(path) is not a sealed folder key (damaged?)", code: EKEYREJECTED)
        }
        guard let material = unwrapMaterial(sealed, userKey: userKey) else {
            throw StorageError("wrong encryption key for the cache folder (the key check in \(path) failed)",
                               code: EKEYREJECTED)
        }
        return FolderKeys(material)
    }

    // MARK: working keys

    /// The store key of a cache key: keyed, so file names reveal no URL.
    package func storeKey(for cacheKey: String) -> String {
        nameKey.mac(cacheKey.utf8).withUnsafeBytes(Digest.hex)
    }

    /// The XTS tweak's file id: equal bytes at equal offsets of two files differ on disk.
    func fileID(key: String, version: Int) -> UInt64 {
        let mac = Digest.hmacSHA256(key: idKey, message: Array("\(key).\(version)".utf8)) ?? []
        return mac.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    func cipher(key: String, version: Int) -> UnitCipher? {
        UnitCipher(key: dataKey, fileID: fileID(key: key, version: version))
    }

    /// Seals a file's content; `context` names what it is (an entry's key, "index.0").
    package func seal(_ plaintext: [UInt8], context: String) -> [UInt8]? {
        Sealing.seal(plaintext, key: sealKey, context: Array(context.utf8))
    }

    /// What a download record (`downloads/<id>`, it names a URL) is sealed as.
    package static func downloadContext(_ id: String) -> String { "download " + id }

    package func open(_ sealed: [UInt8], context: String) -> [UInt8]? {
        Sealing.open(sealed, key: sealKey, context: Array(context.utf8))
    }

    func open(_ sealed: UnsafeRawBufferPointer, context: String) -> [UInt8]? {
        Sealing.open(sealed, key: sealKey, context: Array(context.utf8))
    }
}
