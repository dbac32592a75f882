package requestlog

import (
	"strconv"
	"text/template"
)

// appendKnativeDefault renders Knative's default template, config.DefaultRequestLogTemplate,
// byte for byte as text/template renders it (TestKnativeDefaultRenderedAsTheTemplate),
// without reflection: the template engine takes most of a logged request's time in the
// gateway (docs/observability.md), and most users keep the default.
func appendKnativeDefault(b []byte, in *input) []byte {
	r := in.Request
	b = append(b, `{"httpRequest": {"requestMethod": "`...)
	b = append(b, r.Method...)
	b = append(b, `", "requestUrl": "`...)
	b = append(b, template.JSEscapeString(r.RequestURI)...)
	b = append(b, `", "requestSize": "`...)
	b = strconv.AppendInt(b, r.ContentLength, 10)
	b = append(b, `", "status": `...)
	b = strconv.AppendInt(b, int64(in.Response.Code), 10)
	b = append(b, `, "responseSize": "`...)
	b = strconv.AppendInt(b, int64(in.Response.Size), 10)
	b = append(b, `", "userAgent": "`...)
	b = append(b, template.JSEscapeString(r.UserAgent())...)
	b = append(b, `", "remoteIp": "`...)
	b = append(b, template.JSEscapeString(r.RemoteAddr)...)
	b = append(b, `", "serverIp": "`...)
	b = append(b, in.Revision.PodIP...)
	b = append(b, `", "referer": "`...)
	b = append(b, template.JSEscapeString(r.Referer())...)
	b = append(b, `", "latency": "`...)
	b = strconv.AppendFloat(b, in.Response.Latency, 'g', -1, 64)
	b = append(b, `s", "protocol": "`...)
	b = append(b, r.Proto...)
	b = append(b, `"}, "traceId": "`...)
	b = append(b, in.TraceID...)
	b = append(b, `"}`...)
	return b
}
