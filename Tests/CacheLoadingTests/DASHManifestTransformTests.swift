import CacheHTTP
@testable import CacheLoading
import CacheStorage
import Logging
import XCTest

/// The MPD rewrite on the way out, per mode: base-form proxy URLs that keep
/// templates, forward (unchanged), reverse (proxy host), the hook, LAN signing.
final class DASHManifestTransformTests: XCTestCase {
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

    func run(_ t: DASHManifestTransform) -> String {
        String(decoding: t.rewritten(Array(mpd.utf8)), as: UTF8.self)
    }

    func testProxyURLModeWritesBaseFormURLsThatKeepTemplates() throws {
        let out = run(DASHManifestTransform(manifestURL: manifestURL, mode: .proxyURLs, proxyHost: proxyHost, logger: logger))
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
        XCTAssertNil(DASHManifestTransform.choose(manifestURL: manifestURL, mode: .forward, clientHost: proxyHost, hook: nil,
                                                  proxyPath: nil, logger: logger))
        let reverse = run(DASHManifestTransform(manifestURL: manifestURL, mode: .reverse(originHost: "origin.test:8081"),
                                                proxyHost: proxyHost, logger: logger))
        XCTAssertEqual(reverse, mpd.replacingOccurrences(of: "http://origin.test:8081/abs/", with: "http://\(proxyHost)/abs/"))
        let hooked = run(DASHManifestTransform(manifestURL: manifestURL, mode: .forward, proxyHost: proxyHost, hook: { absolute, kind, proposed in
            XCTAssertNil(proposed)
            return kind == .licence ? "https://proxy.test/licence?u=" + absolute : nil
        }, logger: logger))
        XCTAssertEqual(hooked, mpd.replacingOccurrences(of: ">https://lic.test/ck<", with: ">https://proxy.test/licence?u=https://lic.test/ck<"))
    }

    func testMalformedOrOtherBodiesPassUnchanged() {
        let t = DASHManifestTransform(manifestURL: manifestURL, mode: .proxyURLs, proxyHost: proxyHost, logger: logger)
        for body in ["<MPD><Period></MPD>", "not xml at all", "<html><body/></html>", ""] {
            XCTAssertEqual(t.rewritten(Array(body.utf8)), Array(body.utf8), body)
        }
    }
}
