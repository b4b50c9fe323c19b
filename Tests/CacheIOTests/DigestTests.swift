import CacheIO
import XCTest

final class DigestTests: XCTestCase {
    func testKnownVectors() {
        XCTAssertEqual(Digest.sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(Digest.sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // Non-ASCII text is hashed as its UTF-8 bytes.
        XCTAssertEqual(Digest.sha256Hex("\u{00E9}"), "4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c")
    }
}
