import RemoteBackend
import Testing

@Suite struct UpstreamEndpointTests {
    @Test func optionsComeFromTheFragment() throws {
        let plain = try UpstreamEndpoint.parse("http://10.0.0.5:8000/v1/")
        #expect(plain == UpstreamEndpoint(url: "http://10.0.0.5:8000/v1", weight: 1, maxActive: nil))
        let weighted = try UpstreamEndpoint.parse("https://gpu.example/v1?x=1;y=2#weight=3&max_active=16")
        #expect(weighted.url == "https://gpu.example/v1?x=1;y=2")
        #expect(weighted.weight == 3)
        #expect(weighted.maxActive == 16)
    }

    @Test func badSpecsAreRefusedWithTheirReason() {
        for (spec, words) in [
            ("ftp://a/v1", "not an http"), ("http://a/v1#weight=0", "positive integer"),
            ("http://a/v1#weight=x", "positive integer"), ("http://a/v1#speed=2", "unknown option"),
        ] {
            #expect {
                _ = try UpstreamEndpoint.parse(spec)
            } throws: { error in
                (error as? UpstreamSpecError)?.description.contains(words) ?? false
            }
        }
    }

    @Test func credentialsNeverShow() throws {
        let e = try UpstreamEndpoint.parse("https://user:s3cret@gpu.example:8443/v1?api_key=k3y#weight=2")
        #expect(e.displayURL == "https://…@gpu.example:8443/v1?…")
        #expect(!e.displayURL.contains("s3cret") && !e.displayURL.contains("k3y") && !e.displayURL.contains("user"))
        #expect(UpstreamEndpoint(url: "http://a:8000/v1").displayURL == "http://a:8000/v1")
    }
}
