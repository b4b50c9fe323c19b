import CacheHTTP
import XCTest

final class ProxyURLTests: XCTestCase {
    func testRoundTrips() throws {
        let cases: [(origin: String, name: String)] = [
            ("http://example.com/video.mp4", "video.mp4"),
            ("https://example.com/a/b/movie.m3u8?token=abc&x=%2F#t=10", "movie.m3u8"),
            ("https://example.com/", "index"),
            ("https://example.com", "index"),
            ("https://example.com?q=1", "index"),
            ("http://example.com/dir/", "index"),
            ("http://example.com/dir/?a/b", "index"),
            ("http://[::1]:8080/x/y.ts", "y.ts"),
            ("http://[2001:db8::1]/seg", "seg"),
            ("http://example.com:81/My%20Movie.mp4", "My%20Movie.mp4"),
            ("http://example.com/caf\u{E9}%20\u{1F3AC}.mp4", "caf%C3%A9%20%F0%9F%8E%AC.mp4"),
            ("http://example.com/a%zz%4", "a%25zz%254"),
            ("http://example.com/a;b=c,d(e)!'*", "a%3Bb%3Dc%2Cd%28e%29%21%27%2A"),
            ("http://example.com/~user_x-y.z", "~user_x-y.z"),
            ("http://example.com/a/..", "%2E%2E"),
            ("http://example.com/a/.", "%2E"),
            ("http://example.com/a/...", "..."),
            ("HTTP://EXAMPLE.com/X", "X"),
            ("http://example.com/a?", "a"),
            ("http://example.com/#frag/x", "index"),
        ]
        for c in cases {
            let path = try XCTUnwrap(ProxyURL.path(forOrigin: c.origin), c.origin)
            XCTAssertTrue(path.hasPrefix("/p/"), path)
            XCTAssertTrue(path.hasSuffix("/" + c.name), "\(path) should end with \(c.name)")
            // The encoded segment is base64url: no padding, no '+', '/', '='.
            let segment = path.dropFirst(3).prefix { $0 != "/" }
            XCTAssertTrue(segment.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }, path)
            // Path must be usable as a request target as-is.
            XCTAssertTrue(path.utf8.allSatisfy { (0x21...0x7E).contains($0) }, path)
            XCTAssertEqual(ProxyURL.origin(fromTarget: path), c.origin, path)
            XCTAssertEqual(ProxyURL.origin(fromTarget: path + "?player=1&a=/p/"), c.origin, path)
            // The name is ignored when decoding.
            let renamed = path.prefix(3 + segment.count) + "/whatever.bin"
            XCTAssertEqual(ProxyURL.origin(fromTarget: String(renamed)), c.origin, path)
        }
    }

    func testKnownEncoding() {
        // base64url("http://a/b") without padding.
        XCTAssertEqual(ProxyURL.path(forOrigin: "http://a/b"), "/p/aHR0cDovL2EvYg/b")
        XCTAssertEqual(ProxyURL.origin(fromTarget: "/p/aHR0cDovL2EvYg/"), "http://a/b")
        // Bytes 0xFB 0xFF encode with '-' and '_' (not '+' and '/').
        XCTAssertEqual(ProxyURL.origin(fromTarget: "/p/aHR0cDovL2EvPz8-Pw/x"), "http://a/??>?")
        XCTAssertEqual(ProxyURL.path(forOrigin: "http://a/?>>?"), "/p/aHR0cDovL2EvPz4-Pw/index")
    }

    func testPathRejects() {
        for origin in ["ftp://example.com/a", "file:///etc/passwd", "example.com/a", "", "http://", "/p/x/y",
                       "http://a b/", "http://u@h/", "javascript:alert(1)"] {
            XCTAssertNil(ProxyURL.path(forOrigin: origin), origin)
        }
    }

    func testTargetRejects() {
        func enc(_ s: String) -> String { b64url(Array(s.utf8)) }
        let targets = [
            "", "/", "/p", "/p/", "/p//", "/p//name",
            "/p/" + enc("http://a/b"),                 // missing name segment
            "/p/" + enc("http://a/b") + "?x=/y",       // the slash is in the player's query
            "/x/" + enc("http://a/b") + "/b",          // wrong prefix
            "/P/" + enc("http://a/b") + "/b",
            "p/" + enc("http://a/b") + "/b",
            "/p/" + enc("ftp://a/b") + "/b",
            "/p/" + enc("file:///etc/passwd") + "/passwd",
            "/p/" + enc("not a url") + "/x",
            "/p/" + enc("http://a/b c") + "/x",
            "/p/" + enc("http://a/b") + "=/b",         // padding
            "/p/" + enc("http://a/b").dropLast() + "!/b",   // not in the alphabet
            "/p/aHR0cDovL2EvYg+/b",                    // standard base64 char
            "/p/aHR0cDovL2EvYh/b",                     // non-zero leftover bits
            "/p/aHR0cDovL2EvY/b",                      // length % 4 == 1
            "/p/%61HR0cDovL2EvYg/b",                   // percent-encoded
            "/p/" + b64url([0x68, 0x74, 0x74, 0x70, 0x3A, 0x2F, 0x2F, 0x61, 0x2F, 0xFF, 0xFE]) + "/x", // not UTF-8
            "/p/" + b64url([0x68, 0x74, 0x74, 0x70, 0x3A, 0x2F, 0x2F, 0x61, 0x2F, 0xC3]) + "/x",       // truncated UTF-8
            "/p/!!!!/x",
        ]
        for t in targets {
            XCTAssertNil(ProxyURL.origin(fromTarget: t), t)
            XCTAssertNil(ProxyURL.originURL(fromTarget: t), t)
        }
    }

    func testOriginURLFromTargetParsesOnce() throws {
        let origin = "https://CDN.example.com:8443/v/movie.mp4?token=a%20b&x=1"
        let path = try XCTUnwrap(ProxyURL.path(forOrigin: origin))
        let url = try XCTUnwrap(ProxyURL.originURL(fromTarget: path + "?player=1"))
        XCTAssertEqual(url, OriginURL.parse(origin))
        XCTAssertEqual(url.host, "cdn.example.com")
        XCTAssertEqual(url.pathAndQuery, "/v/movie.mp4?token=a%20b&x=1")
    }
}

/// Independent base64url encoder for the tests.
private func b64url(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    var out = ""
    var i = 0
    while i < bytes.count {
        let chunk = Array(bytes[i..<min(i + 3, bytes.count)])
        let v = chunk.enumerated().reduce(0) { $0 | Int($1.element) << (16 - 8 * $1.offset) }
        for k in 0...chunk.count { out.append(alphabet[(v >> (18 - 6 * k)) & 63]) }
        i += 3
    }
    return out
}

/// The base form `/t/<base>/<tail>`: the tail stays verbatim, so a player
/// fills in templates and resolves references in it.
final class ProxyURLBaseFormTests: XCTestCase {
    func testTemplatesKeepTheirTailAndMapBackToTheOrigin() throws {
        let cases: [(origin: String, cut: UInt8?, tail: String)] = [
            ("http://o.example/v/$RepresentationID$/seg-$Number%05d$.m4s", UInt8(ascii: "$"),
             "$RepresentationID$/seg-$Number%05d$.m4s"),
            ("http://o.example/v/a/seg-$Time$.m4s?tok=1&x=$$", UInt8(ascii: "$"), "seg-$Time$.m4s?tok=1&x=$$"),
            ("http://o.example/v/a/b.mp4?x=/y", nil, "b.mp4?x=/y"),
            ("https://o.example:8443/dir/", nil, ""),
            ("http://o.example", nil, ""),
        ]
        for c in cases {
            let path = try XCTUnwrap(ProxyURL.basePath(forOrigin: c.origin, cutBefore: c.cut), c.origin)
            XCTAssertTrue(path.hasPrefix("/t/"), path)
            XCTAssertTrue(path.hasSuffix("/" + c.tail), "\(path) keeps \(c.tail)")
            XCTAssertTrue(ProxyURL.isProxyTarget(path))
            // A filled-in template maps to the origin filled in the same way.
            let filled = path.replacingOccurrences(of: "$RepresentationID$", with: "v1")
                .replacingOccurrences(of: "$Number%05d$", with: "00042").replacingOccurrences(of: "$Time$", with: "9")
            let origin = OriginURL.parse(c.origin)!.string.replacingOccurrences(of: "$RepresentationID$", with: "v1")
                .replacingOccurrences(of: "$Number%05d$", with: "00042").replacingOccurrences(of: "$Time$", with: "9")
            XCTAssertEqual(ProxyURL.origin(fromTarget: filled), origin, filled)
            XCTAssertEqual(ProxyURL.originURL(fromTarget: filled)?.string, origin, filled)
            XCTAssertNil(ProxyURL.signature(fromTarget: path))
        }
    }

    func testSignedFormCoversTheBaseAndTailsCannotClimbOut() throws {
        let path = try XCTUnwrap(ProxyURL.basePath(forOrigin: "http://o.example/v/$Number$.m4s", sign: { "SIG(" + $0 + ")" }))
        let b64 = path.dropFirst(3).prefix { $0 != "~" }
        XCTAssertEqual(path, "/t/\(b64)~SIG(base http://o.example/v/)/$Number$.m4s")
        let signed = try XCTUnwrap(ProxyURL.signedSubject(fromTarget: "/t/\(b64)~abc/7.m4s"))
        XCTAssertEqual(signed.subject, "base http://o.example/v/")
        XCTAssertEqual(signed.signature, "abc")
        XCTAssertEqual(ProxyURL.origin(fromTarget: "/t/\(b64)~abc/7.m4s"), "http://o.example/v/7.m4s")
        // Dot segments (escaped or not), an absolute tail, a base that is not a directory: refused.
        for tail in ["../x", "a/../../x", "%2e%2E/x", ".", "a/./b", "/x", "a b", "a%2F..%2F..%2Fx", "a%5c..", "a\\..\\x"] {
            XCTAssertNil(ProxyURL.origin(fromTarget: "/t/\(b64)/\(tail)"), tail)
        }
        XCTAssertEqual(ProxyURL.origin(fromTarget: "/t/\(b64)/a..b/...x?../y"), "http://o.example/v/a..b/...x?../y")
        var notDirectory: [UInt8] = Array("/t/".utf8)
        Base64URL.encode("http://o.example/v".utf8, into: &notDirectory)
        XCTAssertNil(ProxyURL.origin(fromTarget: String(decoding: notDirectory, as: UTF8.self) + "/x"))
        XCTAssertNil(ProxyURL.origin(fromTarget: "/t/!!/x"))
    }

    /// Targets split at bytes: a "/" followed by a combining mark (one
    /// Character with it) still separates (a fuzz find: the tail "\u{07EE}").
    func testSeparatorsBeforeACombiningMarkStillSeparate() throws {
        let origin = "http://o.example/v/\u{07EE}"
        let base = try XCTUnwrap(ProxyURL.basePath(forOrigin: origin, cutBefore: nil))
        XCTAssertEqual(ProxyURL.origin(fromTarget: base), origin)
        let signedBase = try XCTUnwrap(ProxyURL.basePath(forOrigin: origin, cutBefore: nil, sign: { _ in "sig" }))
        XCTAssertEqual(ProxyURL.signature(fromTarget: signedBase), "sig")
        let path = try XCTUnwrap(ProxyURL.path(forOrigin: "http://o.example/a.mp4", signature: "sig"))
        let b64 = path.split(separator: "/")[1]
        XCTAssertEqual(ProxyURL.signature(fromTarget: "/p/\(b64)/sig/\u{0301}x"), "sig")
        XCTAssertEqual(ProxyURL.origin(fromTarget: "/p/\(b64)/\u{0301}x"), "http://o.example/a.mp4")
    }
}
