import Foundation
import XCTest

/// DASH presentations made by ffmpeg at test time and served by nginx, each
/// two video representations (320x240, 160x120) and one audio track, 6 s in
/// 2 s segments:
/// - `/dash/timeline/manifest.mpd`: SegmentTemplate with `$Number%05d$` and a SegmentTimeline;
/// - `/dash/number/manifest.mpd`: SegmentTemplate with `$Number%05d$` and a duration;
/// - `/dash/single/manifest.mpd`: one file per representation, a SegmentList of `mediaRange`s;
/// - `/dash/base/manifest.mpd`, written here: SegmentBase with `indexRange` over
///   one file per representation with a global `sidx` (remuxed from the single files).
final class DASHFixture {
    let directory: TemporaryDirectory
    let root: URL
    let origin: NginxOrigin

    var timeline: String { origin.url("/dash/timeline/manifest.mpd") }
    var number: String { origin.url("/dash/number/manifest.mpd") }
    var single: String { origin.url("/dash/single/manifest.mpd") }
    var base: String { origin.url("/dash/base/manifest.mpd") }
    /// The media files of the single-file and SegmentBase forms.
    var singleFiles: [String] { (0..<3).map { origin.url("/dash/single/manifest-stream\($0).mp4") } }
    var baseFiles: [String] { (0..<3).map { origin.url("/dash/base/stream\($0).mp4") } }

    init() throws {
        let ffmpeg = try TestTools.requireTool("ffmpeg")
        directory = try TemporaryDirectory(prefix: "dash-fixture")
        root = directory.file("www")
        origin = try NginxOrigin(root: root, start: false)
        for sub in ["timeline", "number", "single", "base"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent("dash/" + sub), withIntermediateDirectories: true)
        }
        func path(_ p: String) -> String { root.appendingPathComponent("dash/" + p).path }
        let input = ["-nostdin", "-hide_banner", "-loglevel", "error", "-y",
                     "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=6",
                     "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=6",
                     "-map", "0:v", "-map", "0:v", "-map", "1:a",
                     "-c:v", "libx264", "-preset", "ultrafast", "-g", "50", "-keyint_min", "50", "-sc_threshold", "0",
                     "-b:v:0", "400k", "-s:v:1", "160x120", "-b:v:1", "150k", "-c:a", "aac", "-b:a", "64k",
                     "-f", "dash", "-seg_duration", "2", "-adaptation_sets", "id=0,streams=v id=1,streams=a"]
        func run(_ arguments: [String]) throws {
            let result = try TestTools.run(ffmpeg, arguments, timeout: 120)
            guard result.succeeded else { throw TestSupportError("ffmpeg failed: \(result.stderr)") }
        }
        try run(input + ["-use_template", "1", "-use_timeline", "1", path("timeline/manifest.mpd")])
        try run(input + ["-use_template", "1", "-use_timeline", "0", path("number/manifest.mpd")])
        try run(input + ["-single_file", "1", path("single/manifest.mpd")])
        // SegmentBase: each single file remuxed with one global sidx, no trailer.
        var representations: [String] = []
        for k in 0..<3 {
            try run(["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", path("single/manifest-stream\(k).mp4"),
                     "-c", "copy", "-frag_duration", "2000000", "-movflags", "+frag_keyframe+empty_moov+default_base_moof+global_sidx+skip_trailer",
                     path("base/stream\(k).mp4")])
            let (initEnd, sidx) = try Self.sidxRange(of: URL(fileURLWithPath: path("base/stream\(k).mp4")))
            let video = k < 2
            representations.append("""
                    <Representation id="\(k)" bandwidth="\([400000, 150000, 64000][k])" codecs="\(video ? "avc1.f4000d" : "mp4a.40.2")">
                      <BaseURL>stream\(k).mp4</BaseURL>
                      <SegmentBase indexRange="\(sidx.lowerBound)-\(sidx.upperBound - 1)">
                        <Initialization range="0-\(initEnd - 1)"/>
                      </SegmentBase>
                    </Representation>
            """)
        }
        try Data("""
        <?xml version="1.0" encoding="utf-8"?>
        <!-- SegmentBase over files with a global sidx -->
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT6.0S" minBufferTime="PT2S"
             profiles="urn:mpeg:dash:profile:isoff-on-demand:2011">
          <Period id="0">
            <AdaptationSet contentType="video" mimeType="video/mp4">
        \(representations[0])
        \(representations[1])
            </AdaptationSet>
            <AdaptationSet contentType="audio" mimeType="audio/mp4" lang="en">
        \(representations[2])
            </AdaptationSet>
          </Period>
        </MPD>

        """.utf8).write(to: URL(fileURLWithPath: path("base/manifest.mpd")))
        try origin.start()
    }

    /// The end of the boxes before the `sidx` and the sidx's byte range.
    static func sidxRange(of file: URL) throws -> (Int, Range<Int>) {
        let data = [UInt8](try Data(contentsOf: file))
        var at = 0
        while at + 8 <= data.count {
            let size = data[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: data[(at + 4)..<(at + 8)], as: UTF8.self)
            if type == "sidx" { return (at, at..<(at + size)) }
            guard size >= 8 else { break }
            at += size
        }
        throw TestSupportError("no sidx in \(file.path)")
    }

    /// The file behind an origin URL of this fixture.
    func file(for url: String) -> URL? {
        let prefix = "http://127.0.0.1:\(origin.port)/"
        guard url.hasPrefix(prefix) else { return nil }
        return root.appendingPathComponent(String(url.dropFirst(prefix.count).prefix { $0 != "?" }))
    }
}
