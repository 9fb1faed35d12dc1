package harness

import (
	"fmt"
	"html"
	"net/url"
	"strings"
)

// Form is an HTML form found on a page.
type Form struct {
	// Action is the absolute URL the form submits to (the page URL if the form has no action).
	Action *url.URL
	// Method is "GET" or "POST".
	Method string
	// Fields are the values a browser would submit without any click: hidden and text inputs,
	// checked checkboxes and radios, textareas.
	Fields url.Values
	// Buttons are the form's submit controls, in document order.
	Buttons []FormButton
}

// FormButton is a submit control: <button type=submit> or <input type=submit|image>.
type FormButton struct {
	Name, Value string
}

// Button returns the submit control with this name and value.
func (f *Form) Button(name, value string) (FormButton, bool) {
	for _, b := range f.Buttons {
		if b.Name == name && b.Value == value {
			return b, true
		}
	}
	return FormButton{}, false
}

// Values returns the data a browser submits when button is clicked: the form's fields plus the
// button's name=value if it has a name.
func (f *Form) Values(button *FormButton) url.Values {
	v := url.Values{}
	for k, vs := range f.Fields {
		v[k] = append([]string(nil), vs...)
	}
	if button != nil && button.Name != "" {
		v.Add(button.Name, button.Value)
	}
	return v
}

// ParseForms returns the forms of an HTML document whose URL is base. It is a small, tolerant
// scanner for the pages of authorization servers (consent and form_post pages), not a full
// HTML parser: it ignores scripts, styles, comments and nested forms.
func ParseForms(body []byte, base *url.URL) ([]Form, error) {
	s := string(body)
	var forms []Form
	var cur *Form
	for i := 0; i < len(s); {
		lt := strings.IndexByte(s[i:], '<')
		if lt < 0 {
			break
		}
		i += lt
		if strings.HasPrefix(s[i:], "<!--") {
			end := strings.Index(s[i+4:], "-->")
			if end < 0 {
				break
			}
			i += 4 + end + 3
			continue
		}
		name, attrs, closing, next := scanTag(s, i)
		i = next
		if name == "" {
			continue
		}
		switch {
		case !closing && (name == "script" || name == "style"):
			end := strings.Index(strings.ToLower(s[i:]), "</"+name)
			if end < 0 {
				i = len(s)
			} else {
				i += end
			}
		case !closing && name == "form":
			if cur != nil {
				forms = append(forms, *cur)
			}
			f, err := newForm(attrs, base)
			if err != nil {
				return nil, err
			}
			cur = f
		case closing && name == "form":
			if cur != nil {
				forms = append(forms, *cur)
				cur = nil
			}
		case cur != nil && !closing && name == "input":
			addInput(cur, attrs)
		case cur != nil && !closing && name == "button":
			typ := strings.ToLower(attrs["type"])
			if typ == "" || typ == "submit" {
				cur.Buttons = append(cur.Buttons, FormButton{Name: attrs["name"], Value: attrs["value"]})
			}
		case cur != nil && !closing && name == "textarea":
			end := strings.Index(strings.ToLower(s[i:]), "</textarea")
			text := s[i:]
			if end >= 0 {
				text = s[i : i+end]
				i += end
			} else {
				i = len(s)
			}
			if n := attrs["name"]; n != "" {
				cur.Fields.Add(n, html.UnescapeString(text))
			}
		}
	}
	if cur != nil {
		forms = append(forms, *cur)
	}
	return forms, nil
}

func newForm(attrs map[string]string, base *url.URL) (*Form, error) {
	action := base
	if a, ok := attrs["action"]; ok && strings.TrimSpace(a) != "" {
		u, err := base.Parse(strings.TrimSpace(a))
		if err != nil {
			return nil, fmt.Errorf("parse form action %q: %w", a, err)
		}
		action = u
	}
	method := strings.ToUpper(strings.TrimSpace(attrs["method"]))
	if method != "POST" {
		method = "GET"
	}
	return &Form{Action: action, Method: method, Fields: url.Values{}}, nil
}

func addInput(f *Form, attrs map[string]string) {
	name := attrs["name"]
	switch typ := strings.ToLower(attrs["type"]); typ {
	case "submit", "image":
		f.Buttons = append(f.Buttons, FormButton{Name: name, Value: attrs["value"]})
	case "checkbox", "radio":
		if _, checked := attrs["checked"]; checked && name != "" {
			v, ok := attrs["value"]
			if !ok {
				v = "on"
			}
			f.Fields.Add(name, v)
		}
	case "button", "reset", "file":
	default: // hidden, text, email, password, and unknown types behave like text
		if name != "" {
			f.Fields.Add(name, attrs["value"])
		}
	}
}

// scanTag reads the tag starting at s[i] == '<'. It returns the lower-case tag name (empty if
// this is not a tag), its attributes (names lower-cased, values unescaped), whether it is a
// closing tag, and the index just after the tag.
func scanTag(s string, i int) (name string, attrs map[string]string, closing bool, next int) {
	j := i + 1
	if j < len(s) && s[j] == '/' {
		closing = true
		j++
	}
	start := j
	for j < len(s) && isNameByte(s[j]) {
		j++
	}
	if j == start {
		return "", nil, false, i + 1
	}
	name = strings.ToLower(s[start:j])
	attrs = map[string]string{}
	for j < len(s) {
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		if j >= len(s) {
			break
		}
		if s[j] == '>' {
			return name, attrs, closing, j + 1
		}
		if s[j] == '/' {
			j++
			continue
		}
		ks := j
		for j < len(s) && !isSpace(s[j]) && s[j] != '=' && s[j] != '>' && s[j] != '/' {
			j++
		}
		key := strings.ToLower(s[ks:j])
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		val := ""
		if j < len(s) && s[j] == '=' {
			j++
			for j < len(s) && isSpace(s[j]) {
				j++
			}
			if j < len(s) && (s[j] == '"' || s[j] == '\'') {
				q := s[j]
				end := strings.IndexByte(s[j+1:], q)
				if end < 0 {
					return name, attrs, closing, len(s)
				}
				val = s[j+1 : j+1+end]
				j += end + 2
			} else {
				vs := j
				for j < len(s) && !isSpace(s[j]) && s[j] != '>' {
					j++
				}
				val = s[vs:j]
			}
		}
		if key != "" {
			if _, dup := attrs[key]; !dup {
				attrs[key] = html.UnescapeString(val)
			}
		}
	}
	return name, attrs, closing, len(s)
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == ':'
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}
