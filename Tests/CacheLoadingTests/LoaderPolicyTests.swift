import CacheHTTP
@testable import CacheLoading
import XCTest

/// Which content types the cache keeps by default, read from the media type
/// alone (case, parameters and blanks around it do not matter).
final class LoaderPolicyTests: XCTestCase {
    func testMediaTypeIgnoresCaseParametersAndBlanks() {
        XCTAssertEqual(bareMediaType("video/mp4"), "video/mp4")
        XCTAssertEqual(bareMediaType(" Video/MP4 ; codecs=\"avc1\""), "video/mp4")
        XCTAssertEqual(bareMediaType("\tAPPLICATION/vnd.Apple.MPEGURL;charset=utf-8"), "application/vnd.apple.mpegurl")
        XCTAssertEqual(bareMediaType(";x=1"), "")
        XCTAssertEqual(bareMediaType("   "), "")
        XCTAssertEqual(bareMediaType("vidéo/MP4"), "vidéo/mp4", "non-ASCII bytes are kept as they are")
    }

    func testTheForwardAndReverseModesHeuristicNeedsLastModified() {
        var policy = LoaderPolicy()
        XCTAssertEqual(policy.cache(transparent: false).heuristicMinimum, LoaderPolicy.defaultHeuristicMinimum,
                       "proxy URLs keep the media policy")
        XCTAssertFalse(policy.cache(transparent: false).heuristicNeedsLastModified)
        XCTAssertEqual(policy.cache(transparent: true).heuristicMinimum, 0)
        XCTAssertTrue(policy.cache(transparent: true).heuristicNeedsLastModified)
        policy.cache.honorsCDNCacheControl = true
        XCTAssertTrue(policy.cache(transparent: true).honorsCDNCacheControl, "reverse mode's CDN-Cache-Control kept")
        // --revalidate-after is the operator's choice for every mode.
        policy.setHeuristicLifetime(seconds: 60)
        XCTAssertEqual(policy.cache(transparent: true), policy.cache(transparent: false))
        XCTAssertEqual(policy.cache(transparent: true).heuristicMinimum, 60)
    }

    func testDefaultCacheableTypes() {
        for type in [nil, "video/mp4", "Audio/MPEG; x=y", "application/vnd.apple.mpegurl", "application/octet-stream",
                     "application/dash+xml"] as [String?] {
            XCTAssertTrue(LoaderPolicy.defaultCacheable(type), "\(type ?? "none")")
        }
        for type in ["text/html", "application/json", "text/plain; charset=utf-8", "image/png"] {
            XCTAssertFalse(LoaderPolicy.defaultCacheable(type), type)
        }
    }
}
