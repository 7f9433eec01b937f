import ChatPage
import HTTPServer

/// `GET /` and `GET /ui/{file}`: the chat page (docs/chat-page.md), when `ui` is on. The page is
/// open without a key (it asks for one and sends it on its API calls); everything it shows comes
/// from the API routes, which check the key as for any other client.
struct ChatPageRoutes: Sendable {
    /// The route patterns that need no API key.
    static let openRoutes: Set<String> = ["/", "/ui/{file}"]

    func register(_ router: Router) {
        router.get("/") { request in serve("/", request) }
        router.get("/ui/{file}") { request in serve("/ui/" + (request.pathParameters["file"] ?? ""), request) }
    }

    func serve(_ path: String, _ request: HTTPRequest) -> HTTPResponse {
        guard let asset = ChatPageAssets.asset(at: path) else {
            return .error(.notFound("no such file: \(path)"))
        }
        var headers = ChatPageAssets.securityHeaders
        headers.append(("ETag", asset.etag))
        if request.headers["If-None-Match"] == asset.etag {
            return HTTPResponse(status: 304, headers: headers)
        }
        headers.append(("Content-Type", asset.contentType))
        return HTTPResponse(status: 200, headers: headers, body: .bytes(asset.bytes))
    }
}
