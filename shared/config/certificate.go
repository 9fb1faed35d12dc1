package config

import "path/filepath"

// validateCertificate checks that certificate_file and certificate_key_file come together.
// The local gateway, which serves them, loads them and refuses a missing file or a pair that
// does not match (naming both keys); they are not read here, so that `localgateway -dev-ca`
// can read a configuration that names the files it is about to write.
func (c *Config) validateCertificate(e *Error) {
	switch {
	case c.CertificateFile == "" && c.CertificateKeyFile != "":
		e.add("certificate_file", "is required when certificate_key_file is set")
	case c.CertificateFile != "" && c.CertificateKeyFile == "":
		e.add("certificate_key_file", "is required when certificate_file is set")
	}
}

// resolveCertificatePaths makes relative certificate_file and certificate_key_file relative to
// the folder of the configuration file at configPath, as storage.path is.
func (c *Config) resolveCertificatePaths(configPath string) {
	dir, err := filepath.Abs(filepath.Dir(configPath))
	if err != nil {
		return
	}
	for _, p := range []*string{&c.CertificateFile, &c.CertificateKeyFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}
