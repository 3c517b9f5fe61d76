import Clocks
import MicroHTTP
import Metrics

/// The `--metrics-port` server: `GET /metrics` answers the exposition text (`PrometheusText`);
/// any other path 404, any other method 405. Served by MicroHTTP on its own port, apart from the
/// receiver's public one, bound to 127.0.0.1 unless told otherwise.
public enum MetricsEndpoint {
    /// - Parameters:
    ///   - host: IPv4 address to bind.
    ///   - port: TCP port; 0 lets the kernel pick.
    ///   - render: produces the text for one scrape.
    public static func server(host: String, port: UInt16, clock: any WallClock,
                              render: @escaping @Sendable () async -> String) -> HTTPServer {
        let configuration = HTTPServer.Configuration(host: host, port: port, threads: 1, connectionLimit: 64,
                                                     bodyLimit: 1024, gracePeriod: .seconds(2), clock: clock)
        return HTTPServer(configuration: configuration, handler: .async { request in
            .answer(await answer(request, render: render))
        })
    }

    static func answer(_ request: HTTPServerRequest, render: @Sendable () async -> String) async -> HTTPServerResponse {
        guard request.path == "/metrics" else { return .plain("not found: GET /metrics\n", status: 404) }
        guard request.method == "GET" || request.method == "HEAD" else {
            return HTTPServerResponse(status: 405, body: Array("method not allowed\n".utf8), contentType: "text/plain",
                                      headers: [HTTPHeader("Allow", "GET")])
        }
        return HTTPServerResponse(status: 200, body: Array(await render().utf8), contentType: PrometheusText.contentType)
    }
}
