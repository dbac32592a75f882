package resources

import (
	"strings"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// LogURL is a Revision's status.logUrl as Knative makes it: config-observability's
// logging.revision-url-template with ${REVISION_UID} replaced by the Revision's UID,
// or "" when the template is.
func LogURL(rev *v1.Revision, template string) string {
	return strings.ReplaceAll(template, "${REVISION_UID}", string(rev.UID))
}
