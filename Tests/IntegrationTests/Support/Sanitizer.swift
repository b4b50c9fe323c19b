import Foundation
import XCTest

/// The sanitizer the suite runs under (`scripts/test.sh --sanitize`), if any.
/// ASan keeps freed memory in quarantine and TSan shadows every byte, so the
/// RSS bounds of the hardening tests are checked only without one.
enum Sanitizer {
    static let name = ProcessInfo.processInfo.environment["HTTPCACHE_SANITIZER"].flatMap { $0.isEmpty ? nil : $0 }

    /// Asserts that memory grew by less than `bound` bytes, unless a sanitizer runs.
    static func assertGrowth(_ grown: Int, below bound: Int, _ message: @autoclosure () -> String,
                             file: StaticString = #filePath, line: UInt = #line) {
        if let name {
            print("memory bound not checked under the \(name) sanitizer: grew by \(grown >> 20) MiB")
            return
        }
        XCTAssertLessThan(grown, bound, message(), file: file, line: line)
    }
}
