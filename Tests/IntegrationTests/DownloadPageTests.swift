import Foundation
import XCTest

/// The `/ui/` page in a real browser (headless Chromium over the DevTools
/// protocol): it loads without a console error, adds a download through its
/// form, shows its progress advancing, and its buttons pause and remove it.
final class DownloadPageTests: XCTestCase {
    func testThePageRunsDownloadsInABrowser() throws {
        let directory = try TemporaryDirectory(prefix: "download-page")
        defer { directory.remove() }
        let www = directory.file("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        _ = try TestFile.random(size: 12_000_000, seed: 8, in: www, name: "show.mp4")
        let origin = try NginxOrigin(root: www)
        let folder = directory.file("cache").path
        let proxy = try ProxyProcess(cacheDirectory: folder, extraArguments: ["--download-rate", "1MB"])
        defer { proxy.terminate() }
        let browser = try DevToolsBrowser()
        defer { browser.close() }

        try browser.navigate("http://127.0.0.1:\(proxy.port)/ui/")
        XCTAssertEqual(try browser.evaluate("document.title") as? String, "HTTPCache")
        // The add form.
        let url = origin.url("/show.mp4")
        _ = try browser.evaluate("""
            document.getElementById('url').value = '\(url)';
            document.getElementById('name').value = 'Show';
            document.getElementById('addButton').click(); true
            """)
        try browser.waitFor("document.querySelectorAll('#downloads tr.running').length === 1")
        XCTAssertEqual(try browser.evaluate("document.querySelector('#downloads tr td').textContent") as? String, "Show")
        // Progress advances on the page (from the event stream).
        try browser.waitFor("Number(document.querySelector('#downloads tr').dataset.done) > 0")
        let first = try browser.evaluate("Number(document.querySelector('#downloads tr').dataset.done)") as? Double ?? 0
        try browser.waitFor("Number(document.querySelector('#downloads tr').dataset.done) > \(first) + 500000")
        XCTAssertTrue(try browser.evaluate("parseFloat(document.querySelector('#downloads .bar > div').style.width) > 0") as? Bool == true)

        // Pause through its button: the page and the CLI agree.
        _ = try browser.evaluate("document.querySelector('button[data-action=pause]').click(); true")
        try browser.waitFor("document.querySelectorAll('#downloads tr.paused').length === 1")
        let listed = try TestTools.run(CLITests.binary, ["download", "list", "--cache-dir", folder])
        XCTAssertTrue(listed.stdout.contains(" paused "), listed.stdout)

        // The cache and live counters sections filled in.
        try browser.waitFor("document.getElementById('cacheUse').textContent.includes(' of 500.0 MB')")
        try browser.waitFor("document.getElementById('hitRatio').textContent.endsWith('%')")

        // Remove through its button: gone from the page, the folder and the cache.
        _ = try browser.evaluate("document.querySelector('button[data-action=remove]').click(); true")
        try browser.waitFor("document.querySelectorAll('#downloads tr').length === 0")
        let after = try TestTools.run(CLITests.binary, ["download", "list", "--cache-dir", folder])
        XCTAssertEqual(after.stdout, "", after.stderr)
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) {
            (try? TestTools.run(CLITests.binary, ["cache", "list", "--cache-dir", folder]).stdout.contains("0 resources")) == true
        })
        XCTAssertEqual(browser.errors, [], "console errors and exceptions of the page")
    }

    /// The page is the admin surface's: a rebinding page's Host gets 421, and
    /// its requests without the token get 403.
    func testThePageKeepsTheAdminPolicy() throws {
        let directory = try TemporaryDirectory(prefix: "download-page-policy")
        defer { directory.remove() }
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path)
        defer { proxy.terminate() }
        let connection = try RawHTTPConnection(port: proxy.port)
        XCTAssertEqual(try connection.get("/ui/", headers: [("Host", "evil.example")]).status, 421)
        let page = try RawHTTPConnection(port: proxy.port).get("/ui/")
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.header("Content-Type"), "text/html; charset=utf-8")
        XCTAssertNotNil(page.header("Content-Security-Policy"))
        let html = String(decoding: page.body, as: UTF8.self)
        XCTAssertFalse(html.contains("http://") || html.contains("https://") && !html.contains("placeholder=\"https://"),
                       "no external request")
        XCTAssertEqual(try RawHTTPConnection(port: proxy.port).get("/admin/downloads").status, 403)
    }
}
