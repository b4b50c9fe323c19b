import CacheHTTP
import XCTest

final class IPv4LiteralTests: XCTestCase {
    func testEverySpellingTheResolverTakes() {
        for text in ["127.0.0.1", "127.1", "127.0.1", "2130706433", "0x7f000001", "0X7F000001", "0177.0.0.1", "0x7f.0.0.1"] {
            XCTAssertEqual(IPv4Literal.parse(text), 0x7F00_0001, text)
        }
        XCTAssertEqual(IPv4Literal.parse("0"), 0)
        XCTAssertEqual(IPv4Literal.parse("1.2.65535"), 0x0102_FFFF)
        for text in ["", ".", "1..2", "256.0.0.1", "1.2.3.4.5", "08", "0x", "4294967296", "1.2.65536", "a.b.c.d", "127.0.0.1."] {
            XCTAssertNil(IPv4Literal.parse(text), text)
        }
    }

    func testThisMachineInEverySpelling() {
        for host in ["127.0.0.1", "localhost", "LocalHost.", "a.localhost", "127.1", "2130706433", "0x7f000001",
                     "0177.0.0.1", "0.0.0.0", "0", "::1", "[::1]", "::", "[::]", "0:0:0:0:0:0:0:0", "::ffff:127.0.0.1",
                     "127.0.0.1."] {
            XCTAssertTrue(LoopbackHost.isThisMachine(host), host)
        }
        for host in ["example.com", "10.0.0.1", "128.0.0.1", "::2", "[::ffff:10.0.0.1]", "localhost.example.com", "1"] {
            XCTAssertFalse(LoopbackHost.isThisMachine(host), host)
        }
    }
}
