// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "siwa-jobs",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "siwa-jobs", targets: ["siwa-jobs"]),
    ],
    targets: [
        // C libraries from Debian packages.
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),

        // libpq wrapper: connections, bind-parameter SQL, rows, transactions, LISTEN/NOTIFY, COPY.
        .target(name: "Postgres", dependencies: ["CLibPQ"], swiftSettings: strict),
        // OpenSSL wrappers: ES256, RS256, AES-256-GCM, SHA-256, base64url, PEM loading.
        .target(name: "SIWACrypto", dependencies: ["COpenSSL"], swiftSettings: strict),
        // Everything Apple: client secret, HTTP transport (libcurl), REST client, error classes.
        .target(name: "AppleID", dependencies: ["SIWACrypto", "CCurl"], swiftSettings: strict),
        // Generic durable queue on PostgreSQL and the worker supervisor. Knows nothing about Apple.
        .target(name: "Queue", dependencies: ["Postgres"], swiftSettings: strict),
        // The job kinds, schema migrations, seeding and reports.
        .target(name: "SIWAJobs", dependencies: ["Queue", "AppleID", "Postgres", "SIWACrypto", "HTTPServer"], swiftSettings: strict),
        // A small async HTTP server on libmicrohttpd (the notification receiver).
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD"], swiftSettings: strict),
        // A faithful local stand-in for appleid.apple.com on libmicrohttpd.
        .target(name: "Sandbox", dependencies: ["SIWACrypto", "CMicroHTTPD"], swiftSettings: strict),
        // The CLI.
        .executableTarget(
            name: "siwa-jobs",
            dependencies: ["SIWAJobs", "Queue", "AppleID", "Postgres", "SIWACrypto", "Sandbox"],
            swiftSettings: strict
        ),

        .testTarget(name: "PostgresTests", dependencies: ["Postgres"], swiftSettings: strict),
        .testTarget(name: "QueueTests", dependencies: ["Queue", "Postgres"], swiftSettings: strict),
        .testTarget(name: "SIWACryptoTests", dependencies: ["SIWACrypto"], swiftSettings: strict),
        .testTarget(name: "AppleIDTests", dependencies: ["AppleID", "SIWACrypto"], swiftSettings: strict),
        .testTarget(name: "SandboxTests", dependencies: ["Sandbox", "AppleID", "SIWACrypto"], swiftSettings: strict),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["SIWAJobs", "Queue", "AppleID", "Postgres", "SIWACrypto", "Sandbox", "HTTPServer"],
            swiftSettings: strict
        ),
    ]
)
