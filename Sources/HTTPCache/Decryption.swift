import CacheIO
import CacheLoading

/// How one origin resource is encrypted, so that readers and proxy clients
/// get its plaintext while the cache keeps the origin's ciphertext.
///
/// Decryption runs on the way out, for any byte range: the bytes asked for
/// are widened to whole 16-byte blocks, those blocks are read (or fetched),
/// decrypted and cut back. Lengths, `Content-Range` and reader offsets are
/// the same in plaintext as in ciphertext (both ciphers map bytes 1:1).
///
/// **A wrong key is not detected**: neither CTR nor ECB carries an
/// integrity check, so a wrong key or IV yields wrong bytes of the right
/// length. Verify the plaintext (a checksum, a container parse) if that matters.
public struct Decryption: Sendable, Equatable {
    public enum Cipher: Sendable, Equatable {
        /// AES-128 in counter mode. The IV is the initial counter block and
        /// the whole 16-byte block counts up as one big-endian 128-bit
        /// integer, as `openssl enc -aes-128-ctr` does. Any length.
        case aes128CTR
        /// AES-128 in ECB mode without padding (`openssl enc -aes-128-ecb
        /// -nopad`): the resource's length is a multiple of 16.
        case aes128ECB
    }

    public var cipher: Cipher
    /// 16 bytes.
    public var key: [UInt8]
    /// 16 bytes for CTR (the counter block of byte 0); empty for ECB.
    public var iv: [UInt8]

    public init(cipher: Cipher, key: [UInt8], iv: [UInt8] = []) {
        self.cipher = cipher
        self.key = key
        self.iv = iv
    }

    /// AES-128-CTR with this key and initial counter block.
    public static func aes128CTR(key: [UInt8], iv: [UInt8]) -> Decryption {
        Decryption(cipher: .aes128CTR, key: key, iv: iv)
    }

    /// AES-128-ECB (no padding) with this key.
    public static func aes128ECB(key: [UInt8]) -> Decryption {
        Decryption(cipher: .aes128ECB, key: key)
    }

    var spec: DecryptionSpec {
        DecryptionSpec(kind: cipher == .aes128CTR ? .aes128CTR : .aes128ECB, key: key, iv: iv)
    }
}

/// Chooses the decryption of a resource by its origin URL (as given to
/// `proxyURL(for:)`/`openReader`, before redirects); nil: served as is.
///
/// Called on the loop thread owning the resource when a response or reader
/// starts (with several loops, on several threads at once), so keep it
/// quick (keys in memory). Throwing fails that response (500 with
/// the reason) or reader (the error, or `.invalidArgument` for errors that
/// are not `HTTPCacheError`); the cached bytes are untouched. A key that is
/// not 16 bytes (or a CTR IV that is not) fails the same way.
public typealias DecryptionProvider = @Sendable (String) throws -> Decryption?

extension HTTPCacheConfiguration {
    /// The provider as the engine asks it.
    static func lookup(_ provider: DecryptionProvider?) -> DecryptionLookup? {
        guard let provider else { return nil }
        return { url in try provider(url)?.spec }
    }
}
