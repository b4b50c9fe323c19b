import CacheHTTP
import XCTest

final class OriginURLTests: XCTestCase {
    func testParse() throws {
        // input, scheme, host, port, pathAndQuery, hostHeader, authorityKey, string
        let cases: [(String, String, String, Int, String, String, String, String)] = [
            ("http://example.com/a/b.mp4?x=1&y=2", "http", "example.com", 80, "/a/b.mp4?x=1&y=2",
             "example.com", "http://example.com:80", "http://example.com/a/b.mp4?x=1&y=2"),
            ("HTTPS://Example.COM", "https", "example.com", 443, "/",
             "example.com", "https://example.com:443", "https://example.com/"),
            ("https://example.com:8443/v?q#frag", "https", "example.com", 8443, "/v?q",
             "example.com:8443", "https://example.com:8443", "https://example.com:8443/v?q"),
            ("http://example.com:80/", "http", "example.com", 80, "/",
             "example.com", "http://example.com:80", "http://example.com/"),
            ("http://example.com:443/", "http", "example.com", 443, "/",
             "example.com:443", "http://example.com:443", "http://example.com:443/"),
            ("http://example.com:/x", "http", "example.com", 80, "/x",
             "example.com", "http://example.com:80", "http://example.com/x"),
            ("http://example.com?q=1", "http", "example.com", 80, "/?q=1",
             "example.com", "http://example.com:80", "http://example.com/?q=1"),
            ("http://example.com#f", "http", "example.com", 80, "/",
             "example.com", "http://example.com:80", "http://example.com/"),
            ("http://[::1]:8080/x", "http", "::1", 8080, "/x",
             "[::1]:8080", "http://[::1]:8080", "http://[::1]:8080/x"),
            ("https://[2001:DB8::A]/", "https", "2001:db8::a", 443, "/",
             "[2001:db8::a]", "https://[2001:db8::a]:443", "https://[2001:db8::a]/"),
            ("http://[::ffff:192.0.2.1]/", "http", "::ffff:192.0.2.1", 80, "/",
             "[::ffff:192.0.2.1]", "http://[::ffff:192.0.2.1]:80", "http://[::ffff:192.0.2.1]/"),
            ("http://192.0.2.1:65535/A%20B/C", "http", "192.0.2.1", 65535, "/A%20B/C",
             "192.0.2.1:65535", "http://192.0.2.1:65535", "http://192.0.2.1:65535/A%20B/C"),
            ("http://a/caf\u{E9}/\u{1F3AC}.mp4?t=\u{E9}", "http", "a", 80, "/caf\u{E9}/\u{1F3AC}.mp4?t=\u{E9}",
             "a", "http://a:80", "http://a/caf\u{E9}/\u{1F3AC}.mp4?t=\u{E9}"),
            ("http://a/./b/../c", "http", "a", 80, "/./b/../c", "a", "http://a:80", "http://a/./b/../c"),
            ("http://my_host.local/", "http", "my_host.local", 80, "/", "my_host.local", "http://my_host.local:80",
             "http://my_host.local/"),
        ]
        for c in cases {
            let u = try XCTUnwrap(OriginURL.parse(c.0), c.0)
            XCTAssertEqual(u.scheme, c.1, c.0)
            XCTAssertEqual(u.host, c.2, c.0)
            XCTAssertEqual(u.port, c.3, c.0)
            XCTAssertEqual(u.pathAndQuery, c.4, c.0)
            XCTAssertEqual(u.hostHeader, c.5, c.0)
            XCTAssertEqual(u.authorityKey, c.6, c.0)
            XCTAssertEqual(u.string, c.7, c.0)
            XCTAssertEqual(u.isIPv6, c.2.contains(":"), c.0)
            XCTAssertEqual(OriginURL.parse(u.string), u, c.0)
        }
    }

    func testParseRejects() {
        let bad = [
            "", "example.com/x", "/x", "//example.com/x", "ftp://example.com/", "file:///etc/passwd",
            "http:/example.com", "http:example.com", "http://", "http:///x", "http://:80/", "http://?x",
            "http://user@example.com/", "http://user:pw@example.com/", "http://@example.com/",
            "http://exa mple.com/", "http://example.com/a b", "http://example.com/a\tb", "http://example.com/\u{7F}",
            "http://example.com/a\r\nX: y", " http://example.com/", "http://example.com/ ",
            "http://example.com:0/", "http://example.com:65536/", "http://example.com:99999/",
            "http://example.com:123456/", "http://example.com:8a/", "http://example.com:-1/",
            "http://[::1/", "http://[]/", "http://[1.2.3.4]/", "http://[::1]x/", "http://[fe80::1%25eth0]/",
            "http://::1/", "http://ex%41mple.com/", "http://exa!mple.com/", "http://caf\u{E9}.com/",
            "httpx://a/", "https:/a/",
        ]
        for s in bad { XCTAssertNil(OriginURL.parse(s), s.debugDescription) }
        // '@' after the authority is just a path byte.
        XCTAssertEqual(OriginURL.parse("http://a/b@c")?.pathAndQuery, "/b@c")
    }

    func testResolveRFC3986Examples() throws {
        let base = try XCTUnwrap(OriginURL.parse("http://a/b/c/d;p?q"))
        let cases: [(String, String?)] = [
            // §5.4.1 normal examples
            ("g:h", nil), // valid reference, but not an http(s) URL
            ("g", "http://a/b/c/g"),
            ("./g", "http://a/b/c/g"),
            ("g/", "http://a/b/c/g/"),
            ("/g", "http://a/g"),
            ("//g", "http://g/"),
            ("?y", "http://a/b/c/d;p?y"),
            ("g?y", "http://a/b/c/g?y"),
            ("#s", "http://a/b/c/d;p?q"),
            ("g#s", "http://a/b/c/g"),
            ("g?y#s", "http://a/b/c/g?y"),
            (";x", "http://a/b/c/;x"),
            ("g;x", "http://a/b/c/g;x"),
            ("g;x?y#s", "http://a/b/c/g;x?y"),
            ("", "http://a/b/c/d;p?q"),
            (".", "http://a/b/c/"),
            ("./", "http://a/b/c/"),
            ("..", "http://a/b/"),
            ("../", "http://a/b/"),
            ("../g", "http://a/b/g"),
            ("../..", "http://a/"),
            ("../../", "http://a/"),
            ("../../g", "http://a/g"),
            // §5.4.2 abnormal examples
            ("../../../g", "http://a/g"),
            ("../../../../g", "http://a/g"),
            ("/./g", "http://a/g"),
            ("/../g", "http://a/g"),
            ("g.", "http://a/b/c/g."),
            (".g", "http://a/b/c/.g"),
            ("g..", "http://a/b/c/g.."),
            ("..g", "http://a/b/c/..g"),
            ("./../g", "http://a/b/g"),
            ("./g/.", "http://a/b/c/g/"),
            ("g/./h", "http://a/b/c/g/h"),
            ("g/../h", "http://a/b/c/h"),
            ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
            ("g;x=1/../y", "http://a/b/c/y"),
            ("g?y/./x", "http://a/b/c/g?y/./x"),
            ("g?y/../x", "http://a/b/c/g?y/../x"),
            ("g#s/./x", "http://a/b/c/g"),
            ("g#s/../x", "http://a/b/c/g"),
            ("http:g", nil), // strict parsers: a scheme with no authority
        ]
        for (ref, expected) in cases {
            XCTAssertEqual(base.resolving(ref)?.string, expected, ref.debugDescription)
        }
    }

    func testResolveRedirects() throws {
        let base = try XCTUnwrap(OriginURL.parse("https://cdn.example.com:8443/v/1/master.m3u8?tok=1"))
        let cases: [(String, String?)] = [
            ("https://other.example/x.mp4", "https://other.example/x.mp4"),
            ("HTTP://Other.Example:8080/x?y#z", "http://other.example:8080/x?y"),
            ("//mirror.example/y", "https://mirror.example/y"),
            ("//[::1]:9000/y", "https://[::1]:9000/y"),
            ("/root?a=b", "https://cdn.example.com:8443/root?a=b"),
            ("seg-1.ts", "https://cdn.example.com:8443/v/1/seg-1.ts"),
            ("../2/seg.ts?x", "https://cdn.example.com:8443/v/2/seg.ts?x"),
            ("?tok=2", "https://cdn.example.com:8443/v/1/master.m3u8?tok=2"),
            ("ftp://example.com/", nil),
            ("//user@host/", nil),
            ("/a b", nil),
            ("mailto:x@y", nil),
        ]
        for (ref, expected) in cases {
            XCTAssertEqual(base.resolving(ref)?.string, expected, ref.debugDescription)
        }
    }
}
