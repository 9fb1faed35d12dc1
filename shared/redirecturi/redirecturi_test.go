package redirecturi

import "testing"

func TestValidateFor_ApplicationTypes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		uri, appType string
		ok           bool
	}{
		{"https://app.example.com/cb", "", true},
		{"http://127.0.0.1:8080/cb", "", true},
		{"com.example.app:/cb", "", true},
		{"https://app.example.com/cb", AppWeb, true},
		{"http://localhost:3000/cb", AppWeb, true},
		{"http://[::1]/cb", AppWeb, true},
		{"com.example.app:/cb", AppWeb, false},
		{"cursor://anysphere/cb", AppWeb, false},
		{"http://127.0.0.1:8080/cb", AppNative, true},
		{"https://localhost/cb", AppNative, true},
		{"com.example.app:/cb", AppNative, true},
		{"https://app.example.com/cb", AppNative, false},
		{"https://127.0.0.1.evil.example/cb", AppNative, false},
		{"http://app.example.com/cb", AppWeb, false}, // Validate refuses it already
		{"javascript:/alert(1)", AppNative, false},
		{"https://app.example.com/cb", "browser", false},
	}
	for _, tc := range cases {
		err := ValidateFor(tc.uri, tc.appType)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateFor(%q, %q) = %v, want ok %v", tc.uri, tc.appType, err, tc.ok)
		}
	}
}
