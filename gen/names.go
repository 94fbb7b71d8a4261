package gen

// Word lists of the synthetic CRM. Users' full names are drawn from
// firstNames × lastNames and then checked so that no name contains another
// (after lower-casing), which keeps "is this rep named in the answer?"
// unambiguous.

var firstNames = []string{
	"Maria", "James", "Aisha", "Kenji", "Sofía", "Liam", "Priya", "Mateo",
	"Chloé", "Tomasz", "Ngozi", "Lars", "Amara", "Diego", "Elif", "Hannah",
	"Omar", "Yuki", "Björn", "Fatima", "Ravi", "Camille", "Noah", "Zainab",
	"Inès", "Henrik", "Lucía", "Kwame", "Freya", "Arjun", "Mei", "Gabriel",
	"Olga", "Rafael", "Siobhan", "Tariq", "Ingrid", "Malik", "Renée", "Jonas",
}

var lastNames = []string{
	"Okafor", "Lindqvist", "Moreau", "Tanaka", "González", "Novak", "Patel",
	"Schmidt", "Haddad", "Kowalski", "Nakamura", "O'Brien", "Rossi", "Dubois",
	"Andersen", "Mensah", "Ferreira", "Demir", "Whitfield", "Larsen",
	"Abernathy", "Castellanos", "Østergaard", "Mbeki", "Fitzgerald",
	"Villanueva", "Sokolova", "Achterberg", "Delacroix", "Gallagher",
	"Hoffmann", "Iwasaki", "Jovanović", "Kilpatrick", "Lombardi", "Marchetti",
}

// companies are the accounts deals are named after. ACME Corp is the
// account of TASK-001.
var companies = []string{
	"ACME Corp", "Northwind Traders", "Contoso", "Fabrikam", "Tailspin Toys",
	"Woodgrove Bank", "Adventure Works", "Litware", "Proseware",
	"Alpine Ski House", "Coho Winery", "Fourth Coffee", "Wingtip Toys",
	"Blue Yonder Airlines", "Lucerne Publishing", "Humongous Insurance",
	"Trey Research", "Wide World Importers", "Southridge Video", "Relecloud",
	"Kestrel Analytics", "Harbor & Pine", "Brightline Logistics",
	"Oakridge Dental", "Solace Health", "Vantage Robotics", "Cobalt Mining",
	"Redwood Credit Union", "Mistral Foods", "Quarry Lane Media",
	"Helios Solar", "Arbor Biotech", "Granite Peak Outfitters", "Lumen Optics",
	"Pioneer Freight", "Silverleaf Hotels", "Tidewater Marine",
	"Juniper Schools", "Orchid Pharma", "Atlas Fitness", "Müller Maschinenbau",
	"Société Générale des Eaux", "Nordlys Energi", "Sakura Logistics",
}

const acmeCompany = "ACME Corp"

var dealKinds = []string{
	"Platform Renewal", "Enterprise License", "Data Migration",
	"Support Upgrade", "Seat Expansion", "Pilot", "Analytics Add-on",
	"Multi-year Renewal", "Security Bundle", "Onboarding Services",
	"API Access", "Training Package", "Upsell", "Cloud Migration",
	"Premium Support", "Reporting Suite", "Field Service Rollout",
	"Compliance Module", "Integration Project", "Regional Expansion",
}

// openStageKinds are the open stages of a pipeline, in funnel order, with
// the range of their probability. A world uses four to six of them.
var openStageKinds = []struct {
	names    []string
	min, max int
}{
	{[]string{"Prospecting", "Lead", "New"}, 5, 10},
	{[]string{"Qualification", "Qualified"}, 15, 20},
	{[]string{"Discovery", "Needs Analysis"}, 25, 30},
	{[]string{"Solution Design", "Demo"}, 35, 45},
	{[]string{"Proposal", "Proposal Sent", "Quote"}, 50, 60},
	{[]string{"Negotiation", "Contracting"}, 65, 80},
	{[]string{"Verbal Commit", "Commit"}, 85, 90},
}

var wonStageNames = []string{"Closed Won", "Won", "Closed - Won", "Signed"}

var lostStageNames = []string{"Closed Lost", "Lost", "Closed - Lost", "No Decision"}

// models are the default model names, strongest first (see Config.Models).
var defaultModels = []string{"atlas-large", "borealis-medium", "cirrus-small", "drizzle-mini"}
