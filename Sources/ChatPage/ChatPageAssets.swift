/// The chat page's files (assets/, embedded by SwiftPM's `embedInCode`) and the headers every one
/// of them is sent with. The page is plain HTML, CSS and JavaScript written for inferd: no CDN, no
/// external fetch, no inline script or style, so the policy below can forbid everything else.
public enum ChatPageAssets {
    /// `/` is the page; its scripts and style sheet live under `/ui/`.
    public static let all: [ChatPageAsset] = [
        ChatPageAsset(path: "/", contentType: "text/html; charset=utf-8", bytes: PackageResources.index_html),
        ChatPageAsset(path: "/ui/app.css", contentType: "text/css; charset=utf-8", bytes: PackageResources.app_css),
        ChatPageAsset(
            path: "/ui/app.js", contentType: "text/javascript; charset=utf-8", bytes: PackageResources.app_js),
        ChatPageAsset(
            path: "/ui/markdown.js", contentType: "text/javascript; charset=utf-8",
            bytes: PackageResources.markdown_js),
    ]

    public static func asset(at path: String) -> ChatPageAsset? {
        all.first { $0.path == path }
    }

    /// Scripts and styles from this server only, fetches to this server only, no plugins, no
    /// frames, no forms posted elsewhere, no `<base>`: model output that somehow became markup
    /// still could not run or load anything.
    public static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The headers of every page response besides its type and validator.
    public static let securityHeaders: [(String, String)] = [
        ("Content-Security-Policy", contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
        // Revalidate each time (cheap with the ETag): a new binary's page is never mixed with an old script.
        ("Cache-Control", "no-cache"),
    ]
}
