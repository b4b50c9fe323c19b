@testable import CacheHTTP
import XCTest

/// The CMCD parser against the key table of CTA-5004 (version 1): each key
/// with a value of its type is read, any other value of it is dropped and
/// counted, and nothing ever fails the whole payload.
final class CMCDTests: XCTestCase {
    /// key, its type, a valid value (as sent), what it reads as, an invalid value.
    private static let table: [(String, CMCDValue, String, String)] = [
        ("bl", .integer(21300), "21300", "\"21300\""),
        ("br", .integer(3200), "3200", "3.2"),
        ("bs", .boolean(true), "", "yes"),
        ("cid", .string("faec5fc2-ac30-11eabb37-0242ac130002"), "\"faec5fc2-ac30-11eabb37-0242ac130002\"", "faec5fc2"),
        ("d", .integer(4004), "4004", "4004ms"),
        ("dl", .integer(18500), "18500", "-"),
        ("mtp", .integer(48100), "48100", "1234567890123456"),
        // Its value is a URL-encoded path: kept as sent (the hint decodes it).
        ("nor", .string("..%2F300kbps%2Ftrack.m4v"), "\"..%2F300kbps%2Ftrack.m4v\"", "../300kbps/track.m4v"),
        ("nrr", .string("12323-48763"), "\"12323-48763\"", "12323-48763"),
        ("ot", .token("v"), "v", "\"v\""),
        ("pr", .decimal(1.08), "1.08", "1.0834"),
        ("rtp", .integer(12000), "12000", "?1"),
        ("sf", .token("d"), "d", "x"),
        ("sid", .string("6e2fb550-c457-11e9-bb97-0800200c9a66"), "\"6e2fb550-c457-11e9-bb97-0800200c9a66\"",
         "\"" + String(repeating: "s", count: 65) + "\""),
        ("st", .token("v"), "v", "vod"),
        ("su", .boolean(true), "", "1"),
        ("tb", .integer(6000), "6000", ""),
        ("v", .integer(1), "1", "one"),
    ]

    func testEveryKeyOfTheTableWithItsType() {
        XCTAssertEqual(Set(Self.table.map(\.0)), Set(CMCDKey.allCases.map(\.rawValue)), "the table covers every key")
        for (name, expected, valid, invalid) in Self.table {
            let key = CMCDKey(rawValue: name)!
            let member = valid.isEmpty ? name : name + "=" + valid
            // As a field carries it.
            let fromField = CMCD.parse(target: "/s.ts", headers: HTTPHeaders([("CMCD-Request", member)]))
            XCTAssertEqual(fromField?[key], expected, name)
            XCTAssertEqual(fromField?.malformed, 0, name)
            // In the query: the whole payload percent-encoded.
            let encoded = member.utf8.map { c -> String in
                let safe = (c >= 0x30 && c <= 0x39) || (c | 0x20 >= 0x61 && c | 0x20 <= 0x7A) || c == UInt8(ascii: "-")
                return safe ? String(UnicodeScalar(c)) : "%" + String(c, radix: 16, uppercase: true)
            }.joined()
            let fromQuery = CMCD.parse(target: "/s.ts?a=1&CMCD=" + encoded, headers: HTTPHeaders())
            XCTAssertEqual(fromQuery?[key], expected, name)
            XCTAssertEqual(fromQuery?.malformed, 0, name)
            // A value not of the key's type: that key dropped and counted, the next still read.
            let bad = invalid.isEmpty ? name + "=" : name + "=" + invalid
            let wrong = CMCD.parse(payload: bad + ",bl=100")
            if key != .bufferLength { XCTAssertNil(wrong[key], "\(name)=\(invalid)") }
            XCTAssertEqual(wrong.malformed, 1, "\(name)=\(invalid)")
            XCTAssertEqual(wrong.integer(.bufferLength), 100, name)
        }
    }

    func testAPlayersPayloadAsSent() {
        // dash.js style, sorted keys, in the query.
        let target = "/v/seg-12.m4s?CMCD=bl%3D21300%2Cbr%3D3200%2Cbs%2Ccid%3D%22movie%22%2Cd%3D4004%2Cdl%3D18500"
            + "%2Cmtp%3D48100%2Cnor%3D%22seg-13.m4s%22%2Cot%3Dv%2Csf%3Dd%2Csid%3D%22s-1%22%2Cst%3Dv%2Csu%2Ctb%3D6000&x=y"
        let cmcd = try! XCTUnwrap(CMCD.parse(target: target, headers: HTTPHeaders()))
        XCTAssertEqual(cmcd.malformed, 0)
        XCTAssertEqual(cmcd.integer(.bufferLength), 21300)
        XCTAssertTrue(cmcd.flag(.bufferStarvation))
        XCTAssertTrue(cmcd.flag(.startup))
        XCTAssertEqual(cmcd.string(.nextObject), "seg-13.m4s")
        XCTAssertEqual(cmcd.string(.sessionID), "s-1")
        XCTAssertEqual(cmcd.string(.contentID), "movie")
        XCTAssertEqual(cmcd.string(.objectType), "v")
        XCTAssertEqual(cmcd.integer(.deadline), 18500)
    }

    func testFieldsSplitOverTheFourHeaders() {
        let headers = HTTPHeaders([("CMCD-Request", "bl=1500, mtp=2000"), ("cmcd-object", "br=800,ot=a"),
                                   ("CMCD-Status", "bs"), ("CMCD-Session", "sid=\"a\\\"b\",v=1"), ("X-Other", "bl=9")])
        let cmcd = CMCD.parse(target: "/a.ts", headers: headers)!
        XCTAssertEqual(cmcd.integer(.bufferLength), 1500)
        XCTAssertEqual(cmcd.integer(.measuredThroughput), 2000)
        XCTAssertEqual(cmcd.integer(.bitrate), 800)
        XCTAssertEqual(cmcd.string(.objectType), "a")
        XCTAssertTrue(cmcd.flag(.bufferStarvation))
        XCTAssertEqual(cmcd.string(.sessionID), "a\"b")
        XCTAssertEqual(cmcd.malformed, 0)
    }

    func testMalformedIsIgnoredPerKeyNeverFatal() {
        // Unknown key, custom key (fine), a bad integer, junk after a string, an empty member, an open string.
        let cmcd = CMCD.parse(payload: "zz=1,com.example-key=5,bl=abc,cid=\"c\" x,,bs=false,ot=v,sid=\"open")
        XCTAssertEqual(cmcd.string(.objectType), "v")
        XCTAssertEqual(cmcd[.bufferStarvation], .boolean(false))
        XCTAssertNil(cmcd[.contentID])
        XCTAssertNil(cmcd[.sessionID])
        XCTAssertNil(cmcd[.bufferLength])
        XCTAssertEqual(cmcd.malformed, 5)
        // Not CMCD at all.
        let junk = CMCD.parse(target: "/s.ts?CMCD=%3D%3Dnot%20cmcd", headers: HTTPHeaders())
        XCTAssertEqual(junk?.values.isEmpty, true)
        XCTAssertGreaterThan(junk?.malformed ?? 0, 0)
        // Empty: present, nothing in it, nothing wrong.
        XCTAssertEqual(CMCD.parse(target: "/s.ts?CMCD=", headers: HTTPHeaders())?.malformed, 0)
    }

    func testAPayloadPastTheBoundIsDroppedWhole() {
        let huge = "bl=100," + String(repeating: "com.x-k=1,", count: 6600)  // ~64 KiB
        let fromQuery = CMCD.parse(target: "/s.ts?CMCD=" + huge, headers: HTTPHeaders())!
        XCTAssertTrue(fromQuery.values.isEmpty)
        XCTAssertEqual(fromQuery.malformed, 1)
        let fromField = CMCD.parse(target: "/s.ts", headers: HTTPHeaders([("CMCD-Request", huge)]))!
        XCTAssertTrue(fromField.values.isEmpty)
        XCTAssertEqual(fromField.malformed, 1)
    }

    func testTheCheapTestFindsItOnlyWhereItIs() {
        XCTAssertTrue(CMCD.mayBePresent(target: "/s.ts?CMCD=bl%3D1", headers: HTTPHeaders()))
        XCTAssertTrue(CMCD.mayBePresent(target: "/s.ts?a=1&CMCD=", headers: HTTPHeaders()))
        XCTAssertTrue(CMCD.mayBePresent(target: "/s.ts", headers: HTTPHeaders([("cmcd-status", "bs")])))
        XCTAssertFalse(CMCD.mayBePresent(target: "/CMCD=/s.ts", headers: HTTPHeaders([("Accept", "*/*")])))
        XCTAssertFalse(CMCD.mayBePresent(target: "/s.ts?XCMCD=1", headers: HTTPHeaders([("CMCD-Other", "x")])))
        XCTAssertNil(CMCD.parse(target: "/s.ts?a=b", headers: HTTPHeaders([("User-Agent", "x")])))
    }

    /// Any bytes at all: parsed without a crash, every value of its key's type.
    func testArbitraryBytesNeverBreakTheParser() {
        var state: UInt64 = 0x38
        func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 33
        }
        let alphabet = Array("bl=dsnortmpcuv,\"\\?01-.%2C ".utf8) + [0, 0xff, 0x0a]
        for _ in 0..<2000 {
            let count = Int(next() % 64)
            let bytes = (0..<count).map { _ in alphabet[Int(next() % UInt64(alphabet.count))] }
            let text = String(decoding: bytes, as: UTF8.self)
            let cmcd = CMCD.parse(payload: text)
            for (key, value) in cmcd.values {
                switch (key.type, value) {
                case (.integer, .integer), (.decimal, .decimal), (.boolean, .boolean), (.string, .string), (.token, .token): break
                default: XCTFail("\(key) = \(value) from \(bytes)")
                }
            }
            _ = CMCD.parse(target: "/s.ts?CMCD=" + text, headers: HTTPHeaders([("CMCD-Request", text)]))
        }
    }
}
