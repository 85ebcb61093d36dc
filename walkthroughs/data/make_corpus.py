#!/usr/bin/env python3
"""Writes walkthroughs/data/zh-en-corpus.txt: the practice corpus of walkthroughs/02-bpe-training.md.

Every sentence comes from the templates and word lists below (written for this corpus; nothing is
copied from elsewhere), filled in with a fixed seed, so the file is the same on every run:

    python3 walkthroughs/data/make_corpus.py      # rewrites the corpus (about 300 KB)

Mixed Chinese and English on purpose: Chinese runs are long "words" for the Qwen2 pre-tokenizer
(no spaces), so byte pairs inside characters and then characters inside words get merged, and
中华人民共和国 appears often enough to become one symbol within a few hundred merges.
"""
import os
import random

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zh-en-corpus.txt")

CITIES = ["北京", "上海", "广州", "深圳", "杭州", "南京", "成都", "西安", "武汉", "重庆"]
CITIES_EN = ["Beijing", "Shanghai", "Guangzhou", "Shenzhen", "Hangzhou", "Nanjing", "Chengdu", "Xi'an", "Wuhan",
             "Chongqing"]
YEARS = ["1949", "1978", "1997", "2008", "2010", "2020", "2024"]
THINGS = ["铁路", "大学", "博物馆", "图书馆", "公园", "医院", "机场", "地铁", "桥梁", "工厂"]
THINGS_EN = ["railway", "university", "museum", "library", "park", "hospital", "airport", "subway", "bridge",
             "factory"]
TOPICS = ["机器学习", "自然语言处理", "语言模型", "注意力机制", "分词器", "神经网络", "概率", "统计", "数学", "历史"]
TOPICS_EN = ["machine learning", "language processing", "language models", "attention", "tokenizers",
             "neural networks", "probability", "statistics", "mathematics", "history"]
PEOPLE = ["学生", "老师", "工程师", "医生", "作家", "农民", "科学家", "记者"]
PEOPLE_EN = ["students", "teachers", "engineers", "doctors", "writers", "farmers", "scientists", "reporters"]
ADJ = ["重要", "有趣", "困难", "简单", "新", "古老", "美丽", "安静"]
ADJ_EN = ["important", "interesting", "difficult", "simple", "new", "old", "beautiful", "quiet"]

ZH = [
    "中华人民共和国成立于{year}年。",
    "中华人民共和国的首都是北京。",
    "{city}是中华人民共和国的一个大城市。",
    "中华人民共和国有很多{thing}，{city}的{thing}很{adj}。",
    "在中华人民共和国，{people}每天都学习{topic}。",
    "{city}的{people}说：{topic}很{adj}。",
    "{year}年，{city}建成了新的{thing}。",
    "我们今天学习{topic}，明天学习{topic2}。",
    "{topic}是一个{adj}的问题。",
    "这个{thing}在{city}，离中华人民共和国国家博物馆不远。",
    "{people}认为{topic}和{topic2}都很{adj}。",
    "中华人民共和国宪法规定了公民的基本权利。",
    "语言模型先把文本切成词元，再把词元变成编号。",
    "分词器把“中华人民共和国”切成几个词元？",
    "每个汉字在UTF-8里占三个字节。",
    "{city}的天气今天很好，我们去{thing}看看吧。",
    "你好！欢迎来到{city}。",
    "中华人民共和国的人口超过十四亿。",
]
EN = [
    "The People's Republic of China was founded in {year}.",
    "{city_en} has a {thing_en} that {people_en} find {adj_en}.",
    "In {year}, {city_en} opened a new {thing_en}.",
    "Today we study {topic_en}; tomorrow we study {topic2_en}.",
    "{people_en} say that {topic_en} is {adj_en}.",
    "A tokenizer turns text into tokens, and tokens into numbers.",
    "Byte pair encoding merges the most frequent pair of symbols, again and again.",
    "Every Chinese character takes three bytes in UTF-8.",
    "How many tokens does the tokenizer need for the word {topic_en}?",
    "The {thing_en} in {city_en} is {adj_en}, and the {thing2_en} is even more {adj_en}.",
    "Hello! Welcome to {city_en}.",
    "The model reads the prompt, one token at a time, and predicts the next one.",
    "def count_pairs(words):\n    return sum(len(w) - 1 for w in words)",
    "for i in range({n}):\n    print(i, i * i)",
    "{n} + {m} = {s}",
]
BILINGUAL = [
    ("{city}是中华人民共和国的一个城市。", "{city_en} is a city in the People's Republic of China."),
    ("{people}喜欢{topic}。", "{people_en} like {topic_en}."),
    ("这个{thing}很{adj}。", "This {thing_en} is {adj_en}."),
]


def fill(rng, template):
    i, j = rng.randrange(len(CITIES)), rng.randrange(len(THINGS))
    k, k2 = rng.randrange(len(TOPICS)), rng.randrange(len(TOPICS))
    p, a = rng.randrange(len(PEOPLE)), rng.randrange(len(ADJ))
    n, m = rng.randrange(1, 1000), rng.randrange(1, 1000)
    return template.format(
        year=rng.choice(YEARS), city=CITIES[i], city_en=CITIES_EN[i], thing=THINGS[j], thing_en=THINGS_EN[j],
        thing2_en=THINGS_EN[(j + 1) % len(THINGS_EN)], topic=TOPICS[k], topic2=TOPICS[k2], topic_en=TOPICS_EN[k],
        topic2_en=TOPICS_EN[k2], people=PEOPLE[p], people_en=PEOPLE_EN[p], adj=ADJ[a], adj_en=ADJ_EN[a], n=n, m=m,
        s=n + m)


def main():
    rng = random.Random(20261201)
    lines = []
    while sum(len(line.encode()) + 1 for line in lines) < 300_000:
        r = rng.random()
        if r < 0.5:
            lines.append(fill(rng, rng.choice(ZH)))
        elif r < 0.85:
            lines.append(fill(rng, rng.choice(EN)))
        else:
            zh, en = rng.choice(BILINGUAL)
            state = rng.getstate()
            lines.append(fill(rng, zh))
            rng.setstate(state)
            lines.append(fill(rng, en))
    with open(OUT, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {OUT}: {len(lines)} lines")


if __name__ == "__main__":
    main()
