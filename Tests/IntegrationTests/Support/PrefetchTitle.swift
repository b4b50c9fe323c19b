import Foundation
import XCTest

/// Titles with many segments for prefetch tests, written at test time and
/// served by nginx (segments are random bytes: the proxy never decodes them):
/// - `/pf/master.m3u8`: two VOD variants of 12 segments of 2 s, `lo` in
///   MPEG-TS (`lo/segN.ts`), `hi` fMP4 with an init section (`hi/segN.m4s`);
/// - `/pf/live/index.m3u8`: a live playlist (no ENDLIST) listing `seg0`…`seg4`
///   of the eight files there;
/// - `/pf/dash/manifest.mpd`: a static SegmentTemplate (`$RepresentationID$/$Number$.m4s`,
///   12 segments) with two video representations, `v1` and `v2`.
final class PrefetchTitle {
    let directory: TemporaryDirectory
    let root: URL
    let origin: NginxOrigin
    static let segments = 12

    init(extraServerConfig: String = "") throws {
        directory = try TemporaryDirectory(prefix: "prefetch-title")
        let www = directory.file("www")
        root = www
        let fm = FileManager.default
        for sub in ["pf/lo", "pf/hi", "pf/live", "pf/dash/v1", "pf/dash/v2"] {
            try fm.createDirectory(at: www.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        var generator = SystemRandomNumberGenerator()
        func write(_ path: String, bytes: Int) throws {
            let data = Data((0..<bytes).map { _ in UInt8.random(in: 0...255, using: &generator) })
            try data.write(to: www.appendingPathComponent(path))
        }
        func text(_ path: String, _ body: String) throws {
            try Data(body.utf8).write(to: www.appendingPathComponent(path))
        }
        try text("pf/master.m3u8", """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-STREAM-INF:BANDWIDTH=250000,RESOLUTION=160x120
        lo/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=600000,RESOLUTION=320x240
        hi/index.m3u8

        """)
        var lo = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        var hi = "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-MAP:URI=\"init.mp4\"\n"
        for k in 0..<Self.segments {
            try write("pf/lo/seg\(k).ts", bytes: 30_000 + k)
            try write("pf/hi/seg\(k).m4s", bytes: 50_000 + k)
            lo += "#EXTINF:2.0,\nseg\(k).ts\n"
            hi += "#EXTINF:2.0,\nseg\(k).m4s\n"
        }
        try write("pf/hi/init.mp4", bytes: 900)
        try text("pf/lo/index.m3u8", lo + "#EXT-X-ENDLIST\n")
        try text("pf/hi/index.m3u8", hi + "#EXT-X-ENDLIST\n")
        var live = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n"
        for k in 0..<8 { try write("pf/live/seg\(k).ts", bytes: 20_000 + k) }
        for k in 0..<5 { live += "#EXTINF:2.0,\nseg\(k).ts\n" }
        try text("pf/live/index.m3u8", live)
        for representation in ["v1", "v2"] {
            try write("pf/dash/\(representation)/init.mp4", bytes: 700)
            for n in 1...Self.segments { try write("pf/dash/\(representation)/\(n).m4s", bytes: 25_000 + n) }
        }
        try text("pf/dash/manifest.mpd", """
        <?xml version="1.0" encoding="utf-8"?>
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT24S" minBufferTime="PT2S"
             profiles="urn:mpeg:dash:profile:isoff-live:2011">
          <Period id="0">
            <AdaptationSet contentType="video" mimeType="video/mp4">
              <SegmentTemplate initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number$.m4s"
                               startNumber="1" duration="2" timescale="1"/>
              <Representation id="v1" bandwidth="150000" codecs="avc1.f4000d"/>
              <Representation id="v2" bandwidth="400000" codecs="avc1.f4000d"/>
            </AdaptationSet>
          </Period>
        </MPD>

        """)
        origin = try NginxOrigin(root: www, extraServerConfig: extraServerConfig)
    }

    func url(_ path: String) -> String { origin.url(path) }

    /// The bytes of the file behind `path`.
    func bytes(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: root.appendingPathComponent(String(path.dropFirst()))))
    }

    /// Origin requests for `path` logged so far.
    func originRequests(_ path: String) -> Int {
        origin.accessLog().filter { $0.uri == path }.count
    }
}
