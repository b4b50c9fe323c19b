// swift-tools-version:6.0
import PackageDescription

// Layers, one direction of dependency (docs/ARCHITECTURE.md):
// CacheHTTP (pure), CSupport (C) ← CacheIO ← CacheUpstream, CacheStorage ← CacheLoading ← CacheProxy
// ← HTTPCache ← httpcache (CLI), HTTPCacheC (C API). CacheIO needs only CSupport; CacheUpstream and
// CacheStorage use CacheHTTP and CacheIO.
let package = Package(
    name: "HTTPCache",
    products: [
        .library(name: "HTTPCache", targets: ["HTTPCache"]),
        .executable(name: "httpcache", targets: ["HTTPCacheCLI"]),
        // The C API's objects; scripts/install.sh links them into libhttpcache.so
        // with the Swift runtime static (SwiftPM cannot do that for a dynamic product).
        .library(name: "HTTPCacheCStatic", type: .static, targets: ["HTTPCacheC"]),
        .executable(name: "httpcache-bench", targets: ["HTTPCacheBench"]),
        .executable(name: "httpcache-micro", targets: ["HTTPCacheMicro"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .target(
            name: "CSupport",
            path: "CSupport",
            publicHeadersPath: "include",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra", "-Wno-unused-parameter"])],
            linkerSettings: [.linkedLibrary("uv"), .linkedLibrary("ssl"), .linkedLibrary("crypto"), .linkedLibrary("z")]
        ),
        .target(name: "CacheHTTP"),
        .target(name: "CacheIO", dependencies: ["CSupport"]),
        .target(name: "CacheUpstream", dependencies: ["CacheHTTP", "CacheIO", "CSupport", .product(name: "Logging", package: "swift-log")]),
        .target(name: "CacheStorage", dependencies: ["CacheHTTP", "CacheIO", .product(name: "Logging", package: "swift-log")]),
        .target(name: "CacheLoading", dependencies: ["CacheStorage", "CacheUpstream", .product(name: "Logging", package: "swift-log")]),
        .target(name: "CacheProxy", dependencies: ["CacheLoading", .product(name: "Logging", package: "swift-log")]),
        .target(name: "HTTPCache", dependencies: ["CacheProxy", .product(name: "Logging", package: "swift-log")]),
        // The CLI and the C API are front ends of the same engine: they name every module they import.
        .target(name: "HTTPCacheC", dependencies: ["HTTPCache", "CacheIO", "CacheLoading", "CacheUpstream",
                                                   .product(name: "Logging", package: "swift-log")]),
        .executableTarget(
            name: "HTTPCacheCLI",
            dependencies: ["HTTPCache", "CacheHTTP", "CacheIO", "CacheLoading", "CacheProxy",
                           .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "Logging", package: "swift-log")]
        ),
        // Benchmarks: the C load generator and origin, the orchestrator, the micro-benchmarks.
        .target(
            name: "CBenchSupport",
            path: "Benchmarks/CBenchSupport",
            publicHeadersPath: "include",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra", "-Wno-unused-parameter", "-O2"])]
        ),
        .executableTarget(
            name: "HTTPCacheBench",
            dependencies: ["CBenchSupport", "CacheHTTP", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Benchmarks/HTTPCacheBench"
        ),
        .executableTarget(
            name: "HTTPCacheMicro",
            dependencies: ["CacheHTTP", "CacheIO", "CacheStorage", "CacheLoading", "HTTPCache"],
            path: "Benchmarks/HTTPCacheMicro"
        ),
        .testTarget(name: "CacheHTTPTests", dependencies: ["CacheHTTP"]),
        .testTarget(name: "CacheIOTests", dependencies: ["CacheIO", "CSupport"]),
        .testTarget(name: "CacheStorageTests", dependencies: ["CacheStorage"]),
        .testTarget(name: "CacheUpstreamTests", dependencies: ["CacheUpstream"]),
        .testTarget(name: "CacheLoadingTests", dependencies: ["CacheLoading"]),
        .testTarget(name: "CacheProxyTests", dependencies: ["CacheProxy"]),
        .testTarget(name: "IntegrationTests", dependencies: ["HTTPCache", "CacheStorage", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "BenchmarkSmokeTests"),
        // The hc_ functions called from Swift (debug build, no install step).
        .testTarget(name: "HTTPCacheCTests", dependencies: ["HTTPCacheC", "HTTPCache"]),
    ],
    swiftLanguageModes: [.v6]
)
