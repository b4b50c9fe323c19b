import CacheHTTP
import CacheIO
@testable import CacheLoading
import CacheStorage
import Logging
import XCTest

/// The MPD rewrite on the way out, per mode: base-form proxy URLs that keep
/// templates, forward (unchanged), reverse (proxy host), the hook, LAN signing.
final class ManifestTransformDASHTests: XCTestCase {
    let logger = Logger(label: "test")
    let manifestURL = "http://origin.test:8081/v/manifest.mpd"
    let proxyHost = "127.0.0.1:9000"
    let mpd = """
    <?xml version="1.0" encoding="utf-8"?>
    <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static">
      <Period><AdaptationSet>
        <ContentProtection schemeIdUri="urn:x"><dashif:Laurl xmlns:dashif="https://dashif.org/CPS">https://lic.test/ck</dashif:Laurl></ContentProtection>
        <Representation id="r1" bandwidth="1">
          <SegmentTemplate initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number%05d$.m4s"/>
        </Representation>
        <Representation id="r2" bandwidth="1"><BaseURL>http://origin.test:8081/abs/r2.mp4</BaseURL></Representation>
      </AdaptationSet></Period>
    </MPD>
    """

    func dash(_ mode: ManifestRewriteMode, hook: MPDURLHook? = nil) -> ManifestTransform {
        ManifestTransform(url: manifestURL, mode: mode, proxyHost: proxyHost, format: .dash(hook: hook, proxyPath: nil),
                          logger: logger)
    }

    func run(_ t: ManifestTransform) -> String {
        String(decoding: t.rewritten(Array(mpd.utf8)), as: UTF8.self)
    }

    func testProxyURLModeWritesBaseFormURLsThatKeepTemplates() throws {
        let out = run(dash(.proxyURLs))
        let prefix = "http://\(proxyHost)" + ProxyURL.basePath(forOrigin: "http://origin.test:8081/v/x")!.dropLast(1)
        XCTAssertTrue(out.contains("initialization=\"\(prefix)$RepresentationID$/init.mp4\""), out)
        XCTAssertTrue(out.contains("media=\"\(prefix)$RepresentationID$/$Number%05d$.m4s\""), out)
        XCTAssertTrue(out.contains(">https://lic.test/ck<"), "licence servers stay: \(out)")
        let target = out.components(separatedBy: "media=\"http://\(proxyHost)")[1].prefix { $0 != "\"" }
        let filled = target.replacingOccurrences(of: "$RepresentationID$", with: "r1").replacingOccurrences(of: "$Number%05d$", with: "00007")
        XCTAssertEqual(ProxyURL.origin(fromTarget: filled), "http://origin.test:8081/v/r1/00007.m4s")
        XCTAssertTrue(out.contains("<BaseURL>http://\(proxyHost)/t/"), out)
    }

    func testForwardReverseAndHook() {
        XCTAssertNil(ManifestTransform.choose(url: manifestURL, mode: .forward, clientHost: proxyHost,
                                              format: .dash(hook: nil, proxyPath: nil), logger: logger))
        let reverse = run(dash(.reverse(originHost: "origin.test:8081")))
        XCTAssertEqual(reverse, mpd.replacingOccurrences(of: "http://origin.test:8081/abs/", with: "http://\(proxyHost)/abs/"))
        let hooked = run(dash(.forward) { absolute, kind, proposed in
            XCTAssertNil(proposed)
            return kind == .licence ? "https://proxy.test/licence?u=" + absolute : nil
        })
        XCTAssertEqual(hooked, mpd.replacingOccurrences(of: ">https://lic.test/ck<", with: ">https://proxy.test/licence?u=https://lic.test/ck<"))
    }

    func testMalformedOrOtherBodiesPassUnchanged() {
        let t = dash(.proxyURLs)
        for body in ["<MPD><Period></MPD>", "not xml at all", "<html><body/></html>", ""] {
            XCTAssertEqual(t.rewritten(Array(body.utf8)), Array(body.utf8), body)
        }
    }

    /// An MPD stored gzip is inflated, rewritten and deflated like a playlist
    /// (it used to go out with the origin's URLs).
    func testGzipManifestIsRewrittenAndStaysGzip() throws {
        let stored = try XCTUnwrap(Gzip.encode(Array(mpd.utf8)))
        let out = served(dash(.proxyURLs), stored)
        XCTAssertTrue(Gzip.isGzip(out))
        let plain = String(decoding: try XCTUnwrap(Gzip.decode(out, cap: 1 << 20)), as: UTF8.self)
        XCTAssertEqual(plain, run(dash(.proxyURLs)))
        XCTAssertTrue(plain.contains("<BaseURL>http://\(proxyHost)/t/"), plain)
        let broken = Array(stored.prefix(stored.count / 2))
        XCTAssertEqual(served(dash(.proxyURLs), broken), broken, "a body that cannot be inflated passes unchanged")
    }
}
