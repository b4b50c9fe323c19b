import CacheHTTP
import XCTest

final class VaryKeyTests: XCTestCase {
    func testKey() {
        typealias E = VaryKey.Entry
        let cases: [(vary: [String], request: [(String, String)], expected: [E]?, line: UInt)] = [
            ([], [("Accept", "x")], [], #line),                                          // no Vary: empty key
            (["Accept-Encoding"], [("Accept-Encoding", "gzip")], [E(name: "accept-encoding", value: "gzip")], #line),
            (["ACCEPT-ENCODING"], [("accept-encoding", "gzip")], [E(name: "accept-encoding", value: "gzip")], #line),
            (["Accept-Encoding"], [], [E(name: "accept-encoding", value: nil)], #line),  // missing
            (["Accept-Encoding"], [("Accept-Encoding", "")], [E(name: "accept-encoding", value: "")], #line),  // empty
            (["b, a", "A"], [("A", "1"), ("B", "2")], [E(name: "a", value: "1"), E(name: "b", value: "2")], #line),
            (["Accept-Encoding"], [("Accept-Encoding", " gzip ,  br\t")],
             [E(name: "accept-encoding", value: "br,gzip")], #line),                     // OWS folded, sorted
            (["Accept-Encoding"], [("Accept-Encoding", "gzip"), ("Accept-Encoding", "br")],
             [E(name: "accept-encoding", value: "br,gzip")], #line),                     // field lines joined
            (["Accept-Language"], [("Accept-Language", "en US")], [E(name: "accept-language", value: "en us")], #line),
            (["Accept-Language"], [("Accept-Language", "fr, EN ; q = 0.5"), ("Accept-Language", "fr")],
             [E(name: "accept-language", value: "en;q=0.5,fr")], #line),                 // a set of members
            (["Accept-Language"], [("Accept-Language", "en, fr")], [E(name: "accept-language", value: "en,fr")], #line),
            (["Accept-Language"], [("Accept-Language", "fr,en")], [E(name: "accept-language", value: "en,fr")], #line),
            (["X-Flavour"], [("X-Flavour", "B, a")], [E(name: "x-flavour", value: "B,a")], #line),  // others: as sent
            (["*"], [], nil, #line),
            (["Accept, *"], [("Accept", "x")], nil, #line),
            (["Accept", " * "], [], nil, #line),
            ([" , "], [], [], #line),
            // Player telemetry (CMCD) changes with every request: never part of the key.
            (["CMCD-Request, Accept", "cmcd-session"], [("CMCD-Request", "bl=1"), ("Accept", "x")],
             [E(name: "accept", value: "x")], #line),
        ]
        for c in cases {
            let response = HTTPHeaders(c.vary.map { ("Vary", $0) })
            let key = VaryKey(vary: response, request: HTTPHeaders(c.request))
            XCTAssertEqual(key?.entries, c.expected, "\(c.vary) \(c.request)", line: c.line)
        }
    }

    func testMatches() {
        let vary = HTTPHeaders([("Vary", "Accept-Encoding, Accept-Language")])
        let original = HTTPHeaders([("Accept-Encoding", "gzip, br"), ("Accept-Language", "en")])
        let stored = VaryKey(vary: vary, request: original)
        let cases: [(request: [(String, String)], matches: Bool, line: UInt)] = [
            ([("Accept-Encoding", "gzip, br"), ("Accept-Language", "en")], true, #line),
            ([("accept-language", "en"), ("ACCEPT-ENCODING", "gzip,br")], true, #line),   // order, case, spaces
            ([("Accept-Encoding", "gzip"), ("Accept-Encoding", "br"), ("Accept-Language", "en")], true, #line),
            ([("Accept-Encoding", "br, gzip"), ("Accept-Language", "en")], true, #line),   // negotiation: order is no preference
            ([("Accept-Encoding", "gzip, br")], false, #line),                            // missing ≠ present
            ([("Accept-Encoding", "gzip, br"), ("Accept-Language", "")], false, #line),   // empty ≠ "en"
            ([("Accept-Encoding", "GZIP, br"), ("Accept-Language", "EN")], true, #line),  // codings, tags: no case
            ([("Accept-Encoding", "gzip, br, gzip"), ("Accept-Language", "en,,")], true, #line), // repeats, empties
            ([("Accept-Encoding", "gzip;q=1, br"), ("Accept-Language", "en")], false, #line), // a parameter counts
            ([("Accept-Encoding", "gzip, br"), ("Accept-Language", "en"), ("Cookie", "x")], true, #line),
        ]
        for c in cases {
            XCTAssertEqual(VaryKey.matches(storedKey: stored, storedResponseHeaders: vary, request: HTTPHeaders(c.request)),
                           c.matches, "\(c.request)", line: c.line)
        }
        // Vary: * never matches, not even the same request.
        let star = HTTPHeaders([("Vary", "*")])
        XCTAssertFalse(VaryKey.matches(storedKey: VaryKey(vary: star, request: original), storedResponseHeaders: star,
                                       request: original))
    }

    func testTextDistinguishesMissingFromEmpty() {
        let vary = HTTPHeaders([("Vary", "X, A")])
        let texts = [
            VaryKey(vary: vary, request: HTTPHeaders())?.text,
            VaryKey(vary: vary, request: HTTPHeaders([("X", "")]))?.text,
            VaryKey(vary: vary, request: HTTPHeaders([("X", "1"), ("A", "2")]))?.text,
        ]
        XCTAssertEqual(texts, ["a\nx", "a\nx: ", "a: 2\nx: 1"])
    }
}
