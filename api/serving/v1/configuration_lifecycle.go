package v1

import "github.com/ferry-serving/ferry/api/duck"

// ConfigurationConditionReady is the only condition of a Configuration.
const ConfigurationConditionReady = duck.ConditionReady

// ConfigurationConditions has Ready alone.
var ConfigurationConditions = duck.NewLivingConditionSet()

// Reasons of a Configuration's Ready, as Knative spells them (serving
// pkg/apis/serving/v1/configuration_lifecycle.go and its reconciler).
const (
	ReasonRevisionFailed    = "RevisionFailed"
	ReasonRevisionNameTaken = "RevisionNameTaken"
	// ReasonInvalidRevisionName has no Knative counterpart (its webhook rejects such
	// a template); see the Route's InvalidTraffic.
	ReasonInvalidRevisionName = "InvalidRevisionName"
)

// MarkLatestCreatedFailed says the latest created Revision failed, with its Ready
// message.
func (cs *ConfigurationStatus) MarkLatestCreatedFailed(name, message string) {
	ConfigurationConditions.Manage(&cs.Status).MarkFalse(ConfigurationConditionReady, ReasonRevisionFailed,
		"Revision %q failed with message: %s.", name, message)
}

// MarkRevisionCreationFailed says the API server refused the Revision.
func (cs *ConfigurationStatus) MarkRevisionCreationFailed(message string) {
	ConfigurationConditions.Manage(&cs.Status).MarkFalse(ConfigurationConditionReady, ReasonRevisionFailed,
		"Revision creation failed with message: %s.", message)
}

// MarkRevisionNameTaken says the Revision's name is another's: a Revision this
// Configuration does not control, or one whose spec is not the template's.
func (cs *ConfigurationStatus) MarkRevisionNameTaken(name string) {
	ConfigurationConditions.Manage(&cs.Status).MarkFalse(ConfigurationConditionReady, ReasonRevisionNameTaken,
		"The revision name %q is taken by a Revision that is not this Configuration's or whose spec is not its template's.", name)
}

// MarkInvalidRevisionName says the template names its Revision without the
// Configuration's prefix.
func (cs *ConfigurationStatus) MarkInvalidRevisionName(message string) {
	ConfigurationConditions.Manage(&cs.Status).MarkFalse(ConfigurationConditionReady, ReasonInvalidRevisionName, "%s", message)
}

// MarkLatestReady says the latest created Revision is the latest ready one.
func (cs *ConfigurationStatus) MarkLatestReady() {
	ConfigurationConditions.Manage(&cs.Status).MarkTrue(ConfigurationConditionReady)
}

// MarkLatestCreatedUnknown says the latest created Revision is on its way.
func (cs *ConfigurationStatus) MarkLatestCreatedUnknown() {
	ConfigurationConditions.Manage(&cs.Status).MarkUnknown(ConfigurationConditionReady, "", "")
}
